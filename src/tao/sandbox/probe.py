"""Whether children can be confined here, asked once by actually confining one (SPEC S10).

``bwrap`` on PATH proves little: user namespaces may be off (a hardened kernel, a
container, AppArmor's ``restrict_unprivileged_userns``), and macOS has none. So the
probe runs ``true`` through the very wrapper every child gets and keeps the answer
for the process's life. ``$TAO_SANDBOX`` (``--sandbox``) chooses what happens:

- ``auto`` (default): confine where possible; where not, say so, and each test
  execution needs a person's approval (the approval gate asks :func:`availability`);
- ``require``: where the sandbox is missing, refuse to start anything;
- ``off``: never confine; reported as unavailable, so approvals are still asked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tao.errors import ConfigError
from tao.sandbox.command import NotConfinable, confine, tool
from tao.sandbox.settings import MODE_ENV, MODES, Mode, ProcessSettings, Sandbox


@dataclass(frozen=True, slots=True, kw_only=True)
class Availability:
    """Whether tao confines its children now, and if not, why (one line for a person)."""

    available: bool
    reason: str


class SandboxUnavailable(ConfigError):
    """``--sandbox require`` (``TAO_SANDBOX=require``) and no sandbox can be made here."""


def mode() -> Mode:
    """``$TAO_SANDBOX``; unset or empty: ``auto``. A value that is none of the three is an
    error, never read as ``off``."""
    value = os.environ.get(MODE_ENV, "").strip().lower() or ProcessSettings().sandbox
    if value not in MODES:
        raise ConfigError(f"{MODE_ENV}={value!r}: choose auto, require or off")
    return value


#: The Debian package that brings each program the sandbox needs.
_PACKAGE = {"bwrap": "bubblewrap", "prlimit": "util-linux", "setpriv": "util-linux"}


@lru_cache(maxsize=1)
def _probe() -> Availability:
    """Run ``true`` in a real sandbox once; its failure, in bubblewrap's words, is the reason."""
    if not sys.platform.startswith("linux"):
        return Availability(available=False, reason=f"no sandbox on {sys.platform} (needs Linux)")
    try:
        tool("bwrap"), tool("prlimit")  # the missing program named, before anything else
        if os.geteuid() == 0:
            tool("setpriv")
        confined = confine([tool("true")], Sandbox(), cwd=Path("/usr"))
        done = subprocess.run(  # our own fixed command line
            confined.argv, env=confined.env, capture_output=True, timeout=20, check=False
        )
    except NotConfinable as error:
        package = _PACKAGE.get(str(error).split()[0], "coreutils")
        reason = f"{error} (Debian and Ubuntu: apt install {package})"
        return Availability(available=False, reason=reason)
    except (OSError, subprocess.SubprocessError) as error:
        return Availability(available=False, reason=f"bubblewrap could not run: {error}")
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit code {done.returncode}"
        return Availability(available=False, reason=f"bubblewrap cannot confine here: {why}")
    return Availability(available=True, reason="bubblewrap confines child processes")


def availability() -> Availability:
    """Whether child processes run confined now: ``$TAO_SANDBOX`` first, then the probe."""
    try:
        chosen = mode()
    except ConfigError as error:
        return Availability(available=False, reason=str(error))
    if chosen == "off":
        return Availability(available=False, reason=f"the sandbox is turned off ({MODE_ENV}=off)")
    return _probe()


def must_confine() -> bool:
    """For a caller about to start a child: confine it (True), or run it unconfined (False,
    mode ``off`` or ``auto`` without a sandbox). Mode ``require`` without one, or a
    mistyped ``$TAO_SANDBOX``, raises :class:`SandboxUnavailable`."""
    chosen = mode() if os.environ.get(MODE_ENV, "").strip().lower() in ("", *MODES) else None
    if chosen is None:
        raise SandboxUnavailable(availability().reason)
    if chosen == "off":
        return False
    found = _probe()
    if not found.available and chosen == "require":
        raise SandboxUnavailable(f"{MODE_ENV}=require, and {found.reason}")
    return found.available
