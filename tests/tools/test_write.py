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
