"""A path that names nothing gets the paths the model probably meant (issue 30, L4, S1, S2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tao.errors import ToolError
from tao.tools.files import SKIPPED_DIRS, file_tools
from tao.tools.nearby import nearby


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a poem, a CSV in a subfolder, secrets and noise beside them, and a
    link to a folder outside it that holds a CSV of its own."""
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "node_modules").mkdir()
    (root / ".ssh").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "poem.txt").write_text("Roses are red\nViolets are blue\n")
    (root / "data" / "sales.csv").write_text("a,b\n1,2\n")
    (root / "src" / "main.py").write_text("print(1)\n")
    (root / ".env").write_text("TOKEN=x\n")
    (root / "prod.csv.pem").write_text("secret\n")
    (root / ".ssh" / "keys.csv").write_text("secret\n")
    (root / "node_modules" / "dep.csv").write_text("noise\n")
    (outside / "leak.csv").write_text("outside\n")
    os.symlink(outside, root / "linked")
    return root


@pytest.mark.parametrize(
    ("raw", "first"),
    [
        ("poem.txt, 2", "poem.txt"),  # a line number glued to the path
        ("poem.txt, line=2", "poem.txt"),
        ("src/main.py:3", "src/main.py"),
        (".csv", "data/sales.csv"),  # a fragment of a name
        ("*.csv", "data/sales.csv"),  # a pattern
        ("sales", "data/sales.csv"),
        ("poem.text", "poem.txt"),  # a near spelling
        ('"poem.txt, 2"', "poem.txt"),
    ],
)
def test_the_meant_path_comes_first(project: Path, raw: str, first: str) -> None:
    assert nearby(project, raw, SKIPPED_DIRS)[0] == first


def test_secrets_noise_and_links_out_are_never_suggested_S1_S2(project: Path) -> None:
    """The suggestions see what list_files shows: no secret-bearing name, nothing inside a
    key store or tooling folder, and nothing reached through a link out of the project."""
    found = nearby(project, "*.csv", SKIPPED_DIRS, limit=50)
    assert found == ["data/sales.csv"]
    assert nearby(project, ".env", SKIPPED_DIRS) == []
    assert nearby(project, "keys", SKIPPED_DIRS) == []
    assert all("leak" not in p for p in nearby(project, "*", SKIPPED_DIRS, limit=50))


def test_nothing_alike_suggests_nothing(project: Path) -> None:
    assert nearby(project, "quarterly-report.docx", SKIPPED_DIRS) == []
    assert nearby(project, "   ", SKIPPED_DIRS) == []


def test_read_file_names_the_file_it_meant_and_the_call_that_reads_it_L4(project: Path) -> None:
    """Seen on the embedded model: told only "'poem.txt, line=2' does not exist", it wrote an
    empty poem.txt over the real one. The found path now leads, with the call to make."""
    read_file, _ = file_tools(project)
    with pytest.raises(ToolError) as glued:
        read_file.invoke({"path": "poem.txt, line=2"})
    message = str(glued.value)
    assert message.startswith("poem.txt is there")
    assert "read_file[poem.txt]" in message and "does not exist" not in message
    with pytest.raises(ToolError, match=r"data/sales\.csv is what '\.csv' matches"):
        read_file.invoke({"path": ".csv"})
    with pytest.raises(ToolError, match="does not exist; use list_files"):
        read_file.invoke({"path": "quarterly-report.docx"})


def test_list_files_of_a_pattern_lists_what_it_matches(project: Path) -> None:
    """A small model asks list_files to find files (``list_files[.csv]``); the answer is
    the matching paths, an observation it can use, not an error."""
    _, list_files = file_tools(project)
    assert list_files.invoke({"path": ".csv"}) == "Paths that match '.csv':\ndata/sales.csv"
    assert list_files.invoke({"path": "*.py"}) == "Paths that match '*.py':\nsrc/main.py"
    listing = list_files.invoke({"path": "*"})
    assert ".env" not in listing and "keys.csv" not in listing and "leak" not in listing
    with pytest.raises(ToolError, match="outside the project"):
        list_files.invoke({"path": "../*"})
    with pytest.raises(ToolError, match="does not exist"):
        list_files.invoke({"path": "zzz-nothing"})


def test_an_absolute_path_is_refused_with_the_project_path_to_use_S1(project: Path) -> None:
    read_file, list_files = file_tools(project)
    with pytest.raises(ToolError, match=r"such as 'poem\.txt'"):
        read_file.invoke({"path": "/poem.txt"})
    with pytest.raises(ToolError, match=r"such as '\.'"):
        list_files.invoke({"path": "/"})
