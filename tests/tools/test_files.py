"""read_file and list_files stay inside the project and never read secrets (SPEC S1, S2, L6)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tao.errors import ToolError
from tao.tools.base import Tool, cut
from tao.tools.files import file_tools
from tao.tools.paths import ProjectError, inside_project, is_secret_name, project_root


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A project folder and a sibling folder outside it holding a secret."""
    project = tmp_path / "project"
    outside = tmp_path / "outside"
    (project / "src" / "pkg").mkdir(parents=True)
    (project / "config").mkdir()
    outside.mkdir()
    (project / "README.md").write_text("# Demo\nhello\n")
    (project / "src" / "pkg" / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "setup.cfg").write_text("[metadata]\nname = demo\n")
    (project / ".env").write_text("OPENAI_API_KEY=sk-project-secret\n")
    (project / "config" / ".env.local").write_text("TOKEN=local-secret\n")
    (project / "deploy.pem").write_text("pem-secret\n")
    (project / "data.bin").write_bytes(b"\x00\x01\x02")
    (outside / "secret.txt").write_text("outside-secret\n")
    return project, outside


def tools(project: Path) -> tuple[Tool, Tool]:
    read_file, list_files = file_tools(project)
    return read_file, list_files


def test_read_file_reads_allowed_text_types_S2(layout: tuple[Path, Path]) -> None:
    read_file, _ = tools(layout[0])
    assert read_file.invoke({"path": "README.md"}) == "# Demo\nhello\n"
    assert "return a + b" in read_file.invoke({"path": "src/pkg/app.py"})
    assert "name = demo" in read_file.invoke({"path": "./setup.cfg"})
    assert "hello" in read_file.invoke({"path": "src/../README.md"})


def test_read_file_tool_is_described_for_the_model_T1(layout: tuple[Path, Path]) -> None:
    read_file, list_files = tools(layout[0])
    assert read_file.name == "read_file" and list_files.name == "list_files"
    assert read_file.description.startswith("Read a text file of the project")
    assert "relative to the project" in read_file.schema["properties"]["path"]["description"]
    assert read_file.read_only and list_files.read_only
    assert "required" not in list_files.schema  # path defaults to "."


@pytest.mark.parametrize(
    "path",
    ["../outside/secret.txt", "src/../../outside/secret.txt", "..", "/etc/passwd", "~/x.txt"],
)
def test_read_file_refuses_paths_outside_the_project_S1(
    layout: tuple[Path, Path], path: str
) -> None:
    read_file, _ = tools(layout[0])
    with pytest.raises(ToolError, match=r"outside the project|absolute path|home-relative"):
        read_file.invoke({"path": path})


def test_read_file_refuses_absolute_path_even_to_the_outside_secret_S1(
    layout: tuple[Path, Path],
) -> None:
    project, outside = layout
    read_file, _ = tools(project)
    with pytest.raises(ToolError, match="absolute path"):
        read_file.invoke({"path": str(outside / "secret.txt")})


def test_read_file_refuses_symlinked_file_pointing_out_S1(layout: tuple[Path, Path]) -> None:
    project, outside = layout
    (project / "notes.txt").symlink_to(outside / "secret.txt")
    read_file, _ = tools(project)
    with pytest.raises(ToolError, match="outside the project"):
        read_file.invoke({"path": "notes.txt"})


def test_read_file_refuses_symlinked_folder_pointing_out_S1(layout: tuple[Path, Path]) -> None:
    project, outside = layout
    (project / "docs").symlink_to(outside, target_is_directory=True)
    read_file, list_files = tools(project)
    with pytest.raises(ToolError, match="outside the project"):
        read_file.invoke({"path": "docs/secret.txt"})
    with pytest.raises(ToolError, match="outside the project"):
        list_files.invoke({"path": "docs"})
    listing = list_files.invoke({"path": "."})
    assert "docs (link to outside the project, not accessible)" in listing
    assert "secret.txt" not in listing


def test_read_file_follows_symlinks_that_stay_inside_S1(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    (project / "link.md").symlink_to(project / "README.md")
    read_file, _ = tools(project)
    assert "hello" in read_file.invoke({"path": "link.md"})


@pytest.mark.parametrize(
    "name",
    [".env", ".ENV", ".env.local", ".Env.Production", "prod.env", "id_rsa", "id_ed25519.pub",
     "server.KEY", "cert.pem", ".netrc", ".npmrc", ".pypirc", "credentials.json",
     "client_secret.txt", ".git-credentials", ".env.", ".env "],
)  # fmt: skip
def test_secret_names_are_recognised_whatever_their_case_S2(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["README.md", "app.py", "envelope.txt", "keyboard.py", "env.py"])
def test_ordinary_names_are_not_secret_S2(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    "path", [".env", "config/.env.local", "deploy.pem", "./.env", "config/../.env"]
)
def test_read_file_never_reads_secrets_S2(layout: tuple[Path, Path], path: str) -> None:
    read_file, _ = tools(layout[0])
    with pytest.raises(ToolError, match="holds secrets"):
        read_file.invoke({"path": path})


def test_read_file_judges_the_resolved_target_of_a_symlink_S2(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    (project / "notes.txt").symlink_to(project / ".env")
    (project / "src" / "settings.py").symlink_to(project / "config" / ".env.local")
    read_file, _ = tools(project)
    for path in ["notes.txt", "src/settings.py"]:
        with pytest.raises(ToolError, match="holds secrets"):
            read_file.invoke({"path": path})


def test_read_file_refuses_secret_folders_and_key_content_S2(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    (project / ".ssh").mkdir()
    (project / ".ssh" / "config.txt").write_text("Host x\n")
    (project / "key.txt").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n")
    read_file, list_files = tools(project)
    with pytest.raises(ToolError, match="holds secrets"):
        read_file.invoke({"path": ".ssh/config.txt"})
    with pytest.raises(ToolError, match="contains a private key"):
        read_file.invoke({"path": "key.txt"})
    with pytest.raises(ToolError, match="never listed"):
        list_files.invoke({"path": ".ssh"})


def test_read_file_only_opens_the_allow_list_S2(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    (project / "tool.exe").write_text("not really\n")
    (project / "blob.txt").write_bytes(b"text\x00more")
    read_file, _ = tools(project)
    with pytest.raises(ToolError, match="not a text type"):
        read_file.invoke({"path": "tool.exe"})
    with pytest.raises(ToolError, match="not a text type"):
        read_file.invoke({"path": "data.bin"})
    with pytest.raises(ToolError, match="is binary"):
        read_file.invoke({"path": "blob.txt"})


def test_read_file_missing_folder_and_fifo_are_clear_errors_L4(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    os.mkfifo(project / "pipe.txt")
    read_file, _ = tools(project)
    with pytest.raises(ToolError, match="does not exist; use list_files"):
        read_file.invoke({"path": "nope.py"})
    with pytest.raises(ToolError, match="is a folder"):
        read_file.invoke({"path": "src"})
    with pytest.raises(ToolError, match="not a regular file"):
        read_file.invoke({"path": "pipe.txt"})
    with pytest.raises(ToolError, match="NUL byte"):
        read_file.invoke({"path": "README.md\x00.py"})
    with pytest.raises(ToolError, match="empty"):
        read_file.invoke({"path": "  "})


def test_read_file_long_file_is_cut_to_its_head_by_the_loop_L6(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    (project / "big.txt").write_text("A" * 19_990 + "B" * 5_000 + "\n", encoding="utf-8")
    read_file, _ = tools(project)
    text = read_file.invoke({"path": "big.txt"})
    assert len(text) == 24_991  # the tool returns it all; the loop cuts
    assert (read_file.max_chars, read_file.keep) == (20_000, "head")
    shown = cut(text, read_file.max_chars, read_file.keep)
    assert shown.startswith("A" * 19_990 + "B" * 10)
    assert "showing the first 20,000 of 24,991 characters" in shown


def test_read_file_replaces_undecodable_bytes(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    (project / "latin.txt").write_bytes("caf\xe9 ok".encode("latin-1"))
    read_file, _ = tools(project)
    assert read_file.invoke({"path": "latin.txt"}) == "caf\ufffd ok"


def test_list_files_lists_sorted_marks_folders_hides_secrets_S2(
    layout: tuple[Path, Path],
) -> None:
    project, _ = layout
    for noise in [".git", "__pycache__", ".venv", "node_modules"]:
        (project / noise).mkdir()
    _, list_files = tools(project)
    listing = list_files.invoke({})
    lines = listing.splitlines()
    assert lines[0] == "./ (5 entries)"
    assert lines[1:6] == ["config/", "data.bin", "README.md", "setup.cfg", "src/"]
    assert "[2 secret-bearing file(s) not shown]" in listing  # .env, deploy.pem
    assert "[4 folder(s) not shown" in listing
    assert ".env" not in listing and "pem" not in listing and ".git/" not in listing
    sub = list_files.invoke({"path": "src/pkg"})
    assert sub.splitlines() == ["src/pkg/ (1 entries)", "src/pkg/app.py"]
    assert ".env.local" not in list_files.invoke({"path": "config"})


def test_list_files_bounds_the_number_of_entries_L6(tmp_path: Path) -> None:
    for i in range(520):
        (tmp_path / f"f{i:03}.txt").write_text("")
    _, list_files = tools(tmp_path)
    listing = list_files.invoke({"path": "."})
    assert "f499.txt" in listing and "f500.txt" not in listing
    assert "[listing cut: showing the first 500 of 520 entries]" in listing


def test_list_files_refuses_outside_and_files_S1(layout: tuple[Path, Path]) -> None:
    _, list_files = tools(layout[0])
    with pytest.raises(ToolError, match="outside the project"):
        list_files.invoke({"path": "../outside"})
    with pytest.raises(ToolError, match="is a file"):
        list_files.invoke({"path": "README.md"})


def test_file_tools_need_an_existing_project(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match="does not exist"):
        file_tools(tmp_path / "missing")


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    raw=st.one_of(
        st.text(max_size=60),
        st.lists(st.sampled_from(["..", ".", "/", "a", "~", "outside", "link", "\\", "..."])).map(
            "/".join
        ),
    )
)
def test_path_guard_never_lets_a_string_escape_the_project_S1(tmp_path: Path, raw: str) -> None:
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    (tmp_path / "outside").mkdir(exist_ok=True)
    if not (project / "link").is_symlink():
        (project / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    root = project_root(project)
    try:
        resolved = inside_project(root, raw)
    except ToolError:
        return
    assert resolved == resolved.resolve()
    assert resolved.is_relative_to(root)
