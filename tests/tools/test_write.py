"""The ``write`` tool set: confined to the project, never secrets, always a diff (S1, S3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tao import ToolError
from tao.tools.write import write_tools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "app.py").write_text("x = 1\ny = 2\n")
    return root


def tools(project: Path) -> dict[str, object]:
    return {t.name: t for t in write_tools(project)}


def test_both_tools_declare_side_effects_S3(project: Path) -> None:
    write, delete = write_tools(project)
    assert (write.effects, delete.effects) == (("writes",), ("deletes",))
    assert not write.read_only and not delete.read_only


def test_write_creates_and_replaces_inside_the_project(project: Path) -> None:
    write, _ = write_tools(project)
    assert write.invoke({"path": "out/new.txt", "content": "hi\n"}) == (
        "created out/new.txt (3 characters)"
    )
    assert (project / "out" / "new.txt").read_text() == "hi\n"
    assert write.invoke({"path": "app.py", "content": "x = 1\n"}).startswith("replaced app.py")
    assert not list(project.glob(".tao-*"))  # no temporary file left behind


def test_the_preview_is_the_unified_diff_a_person_approves_S3(project: Path) -> None:
    write, delete = write_tools(project)
    assert write.preview is not None and delete.preview is not None
    diff = write.preview({"path": "app.py", "content": "x = 1\ny = 3\n"})
    assert diff.splitlines() == [
        "--- a/app.py",
        "+++ b/app.py",
        "@@ -1,2 +1,2 @@",
        " x = 1",
        "-y = 2",
        "+y = 3",
    ]
    shown = delete.preview({"path": "app.py"})
    assert shown.startswith("delete app.py (12 bytes, sha256 ")  # bound to what is deleted (S6)


GITHUB = "ghp_" + "Zx8Cv6Bn4MLk3Jh2Gf1DsA0PoIuYtRe9WqQ"


@pytest.mark.parametrize("offset", [1_960, 1_985, 1_995, 2_000, 2_010])
def test_a_preview_cuts_a_megabyte_line_without_showing_half_a_secret_S3_S8(
    project: Path, offset: int
) -> None:
    """A minified bundle is one line of megabytes: the preview shows its first 2,000
    characters and says how many more there are, and a token across that cut is hidden
    whole, never shown in part (the line is redacted where it is cut: tao.redact.kept)."""
    (project / "bundle.js").write_text("var a=1;" * 500_000 + "\n")
    write, _ = write_tools(project)
    assert write.preview is not None
    line = "x" * offset + " " + GITHUB + " " + "y" * 1_000_000
    shown = write.preview({"path": "bundle.js", "content": line + "\n"})
    removed, added = shown.splitlines()[3:5]
    assert removed.startswith("-var a=1;") and removed.endswith(
        "... (3,998,001 more characters on this line)"
    )
    assert added.startswith("+xxx") and "more characters on this line)" in added
    assert len(added) < 2_100
    assert not any(GITHUB[i : i + 8] in shown for i in range(len(GITHUB) - 7))
    assert "[REDACTED]" in added or offset >= 2_000


@pytest.mark.parametrize(
    "path", ["../evil.py", "/etc/passwd", ".env", "config/.env.local", "keys/id_rsa", ".git/config"]
)
def test_outside_paths_and_secrets_are_refused_S1(project: Path, path: str) -> None:
    write, delete = write_tools(project)
    with pytest.raises(ToolError):
        write.invoke({"path": path, "content": "x"})
    with pytest.raises(ToolError):
        delete.invoke({"path": path})


def test_symlinked_folder_pointing_out_is_refused_S1(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "link").symlink_to(outside, target_is_directory=True)
    write, _ = write_tools(project)
    with pytest.raises(ToolError, match="outside the project"):
        write.invoke({"path": "link/pwned.txt", "content": "x"})
    assert not (outside / "pwned.txt").exists()


def test_delete_removes_one_file_and_refuses_folders(project: Path) -> None:
    _, delete = write_tools(project)
    (project / "sub").mkdir()
    with pytest.raises(ToolError, match="only files can be deleted"):
        delete.invoke({"path": "sub"})
    assert delete.invoke({"path": "app.py"}) == "deleted app.py"
    assert not (project / "app.py").exists()
    with pytest.raises(ToolError, match="does not exist"):
        delete.invoke({"path": "app.py"})
