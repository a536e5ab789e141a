"""Red team, links a sandboxed test leaves in a writable project (SPEC S6, S10; issue 26).

A test may write where the policy lets the model write; it can leave symlinks there
(to a key outside the project, to its `.env`, to `/proc/self/environ`, to a folder
outside), hard links to a secret under a harmless name, or a FIFO. Whatever a later
tao read, write, delete or listing, or the next pytest run's options, does with those
names must act on the project only. Real bubblewrap, a real pytest child that makes the
links, then the real file tools and ``run_tests``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from tao.errors import ToolError
from tao.sandbox import Sandbox
from tao.tools.files import file_tools
from tao.tools.tests import test_tools
from tao.tools.write import write_tools

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

SECRET = "OUTSIDE-SECRET-4f2a"

MAKE_LINKS = """
import os
def test_make_links():
    outside = {outside!r}
    links = {{"key.txt": outside + "/id_rsa", "env.txt": "../.env", "dir": outside,
             "rel.txt": "../../outside/id_rsa", "environ.txt": "/proc/self/environ"}}
    for name, target in links.items():
        os.symlink(target, "out/" + name)
    try:
        os.link(".env", "out/harmless.txt")
    except OSError:
        pass  # refused by the kernel when the child does not own .env (tao as root)
    os.mkfifo("out/pipe.txt")
"""


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """A project whose writable ``out/`` holds the links a test made inside the sandbox."""
    outside, root = tmp_path / "outside", tmp_path / "proj"
    outside.mkdir()
    (outside / "id_rsa").write_text(f"{SECRET}\n")
    for folder in (root / "tests", root / "out"):
        folder.mkdir(parents=True)
    (root / ".env").write_text("DB_PASSWORD=hunter2-secret\n")
    (root / "tests" / "test_links.py").write_text(MAKE_LINKS.format(outside=str(outside)))
    for folder in (root, root / "out", root / "tests"):
        folder.chmod(0o777)  # as root the child is uid 65534: let it write out/ (docs/security.md)
    (run_tests,) = test_tools(root, sandbox=Sandbox(writable=(root / "out",)), timeout_s=60)
    output = run_tests.invoke({"path": "tests/test_links.py"})
    assert "1 passed" in output, output
    return root, outside


NAMES = ("key.txt", "env.txt", "dir", "rel.txt", "environ.txt", "harmless.txt", "pipe.txt")


@pytest.mark.parametrize("name", NAMES)
def test_file_tools_never_follow_a_link_a_test_left_S6(
    linked: tuple[Path, Path], name: str
) -> None:
    """S6: read, write and delete through each name act on nothing outside the project and
    show no secret; the outside files keep their content."""
    root, outside = linked
    if not os.path.lexists(root / "out" / name):
        pytest.skip(f"the kernel refused to make out/{name} here")
    tools = {tool.name: tool for tool in (*file_tools(root), *write_tools(root))}
    with pytest.raises(ToolError):
        tools["read_file"].invoke({"path": f"out/{name}"})
    with pytest.raises(ToolError):
        tools["write_file"].invoke({"path": f"out/{name}/x" if name == "dir" else f"out/{name}",
                                    "content": "PWNED"})  # fmt: skip
    with contextlib.suppress(ToolError):  # refused, or only the name inside the project goes
        tools["delete_file"].invoke({"path": f"out/{name}"})
    listing = tools["list_files"].invoke({"path": "out"})
    assert SECRET not in listing and "hunter2" not in listing
    assert (outside / "id_rsa").read_text() == f"{SECRET}\n"
    assert sorted(p.name for p in outside.iterdir()) == ["id_rsa"]
    assert (root / ".env").read_text() == "DB_PASSWORD=hunter2-secret\n"


@pytest.mark.parametrize(
    "option", ["--junitxml=out/dir/r.xml", "--junitxml=out/key.txt", "--basetemp=out/dir",
               "--log-file=out/rel.txt", "-o cache_dir=out/dir"]
)  # fmt: skip
def test_the_next_pytest_run_never_writes_through_a_link_a_test_left_S10(
    linked: tuple[Path, Path], option: str
) -> None:
    """S10: a later configuration naming one of those links as a report, log, cache or temp
    folder (pytest empties ``--basetemp``) is refused before pytest starts."""
    root, outside = linked
    (root / "pytest.ini").write_text(f"[pytest]\naddopts = {option}\n")
    (run_tests,) = test_tools(root, timeout_s=60)
    with pytest.raises(ToolError, match="points outside the project"):
        run_tests.invoke({"path": "tests/test_links.py"})
    assert (outside / "id_rsa").read_text() == f"{SECRET}\n"
