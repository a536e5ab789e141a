"""What tao leaves on disk, as the red-team modules read it for leaks."""

from __future__ import annotations

from pathlib import Path


def home_files(home: Path) -> dict[str, bytes]:
    """Every file under TAO_HOME but ``private/`` (owner-only: the real values a resume
    needs), by its path relative to TAO_HOME."""
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in home.rglob("*")
        if p.is_file() and "private" not in p.relative_to(home).parts
    }
