"""Red team, one gate for every effect (SPEC S1, S6; issue 12 item 1).

The model's arguments and the files it can reach are the attacker's input.
Real files, real symlinks; each case failed on the tree before the gate.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tests.fakes.calls import ready

from tao.approval.policy import Policy
from tao.errors import ToolError
from tao.run.act import execute
from tao.tools.files import file_tools
from tao.tools.write import write_tools

OUT_RULE = '[[allow]]\ntool = "write_file"\npath = "out/**"\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "out").mkdir()
    (root / "tests" / "test_x.py").write_text("def test_ok():\n    assert True\n")
    (root / "app.py").write_text("x = 1\n")
    (tmp_path / "outside").mkdir()
    return root


def policy(tmp_path: Path, text: str = OUT_RULE) -> Policy:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return Policy.load(path)


@pytest.mark.parametrize(
    "raw",
    [
        "out/../tests/test_x.py",
        "out/./../tests/test_x.py",
        "out//../app.py",
        "out/sub/../../tests/test_x.py",
    ],
)
def test_dotdot_out_of_the_rule_is_not_preapproved_S6(
    project: Path, tmp_path: Path, raw: str
) -> None:
    write, _ = write_tools(project)
    rules = policy(tmp_path)
    covered = ready(write, path="out/fine.txt", content="ok")
    assert rules.allows(covered.tool, covered.arguments) is not None
    call = ready(write, path=raw, content="pwned")
    assert rules.allows(call.tool, call.arguments) is None


@pytest.mark.parametrize("link", ["out", "out/deep"])
def test_symlink_inside_the_rule_pointing_elsewhere_is_not_preapproved_S6(
    project: Path, tmp_path: Path, link: str
) -> None:
    shutil.rmtree(project / "out")
    if link == "out":
        (project / "out").symlink_to(project, target_is_directory=True)
    else:
        (project / "out").mkdir()
        (project / "out" / "deep").symlink_to(project / "tests", target_is_directory=True)
    write, _ = write_tools(project)
    call = ready(write, path=f"{link}/test_x.py", content="import os")
    assert call.arguments["path"] == ("test_x.py" if link == "out" else "tests/test_x.py")
    assert policy(tmp_path).allows(call.tool, call.arguments) is None
    assert policy(tmp_path).allows(write, {"path": f"{link}/test_x.py", "content": "x"}) is None


def test_the_rule_still_covers_what_it_names_S6(project: Path, tmp_path: Path) -> None:
    write, _ = write_tools(project)
    for raw in ["out/a.txt", "./out/b/c.txt", "out/x/../d.txt"]:
        call = ready(write, path=raw, content="ok")
        assert policy(tmp_path).allows(call.tool, call.arguments) is not None, raw


@pytest.mark.parametrize("raw", ["/etc/passwd", "../outside/x", "~/x", "out/../../outside/x"])
def test_absolute_and_escaping_paths_match_no_rule_S6(
    project: Path, tmp_path: Path, raw: str
) -> None:
    write, _ = write_tools(project)
    rules = policy(tmp_path, '[[allow]]\ntool = "write_file"\npath = "**"\n')
    assert rules.allows(write, {"path": "out/a.txt", "content": "x"}) is not None
    assert rules.allows(write, {"path": raw, "content": "x"}) is None


def test_a_folder_swapped_for_a_link_after_the_check_is_not_written_S6(
    project: Path, tmp_path: Path
) -> None:
    """Pre-approved for out/**, then out becomes a link to tests/: nothing lands in tests/."""
    write, _ = write_tools(project)
    call = ready(write, path="out/test_evil.py", content="import os")
    assert policy(tmp_path).allows(call.tool, call.arguments) is not None
    shutil.rmtree(project / "out")
    (project / "out").symlink_to(project / "tests", target_is_directory=True)
    outcome = execute(call)
    assert outcome.observation.startswith("Error:"), outcome.observation
    assert not (project / "tests" / "test_evil.py").exists()


def test_a_file_swapped_for_a_link_is_not_read_S6(project: Path) -> None:
    """The object read is the object checked, even when the link stays inside."""
    (project / "notes.txt").write_text("harmless")
    (project / "tests" / "data.txt").write_text("other-object")
    read_file, _ = file_tools(project)
    call = ready(read_file, path="notes.txt")
    (project / "notes.txt").unlink()
    (project / "notes.txt").symlink_to(project / "tests" / "data.txt")
    outcome = execute(call)
    assert "other-object" not in outcome.observation
    assert outcome.observation.startswith("Error:")


def test_write_through_a_replaced_file_link_does_not_follow_it_S6(project: Path) -> None:
    write, _ = write_tools(project)
    call = ready(write, path="out/a.txt", content="pwned")
    (project / "out" / "a.txt").symlink_to(project / "app.py")
    outcome = execute(call)
    assert (project / "app.py").read_text() == "x = 1\n", outcome.observation


def test_a_folder_on_the_way_swapped_for_a_link_is_not_listed_S6(project: Path) -> None:
    (project / "out" / "listed.txt").write_text("x")
    _, list_files = file_tools(project)
    call = ready(list_files, path="out")
    shutil.rmtree(project / "out")
    (project / "out").symlink_to(project / "tests", target_is_directory=True)
    outcome = execute(call)
    assert "test_x.py" not in outcome.observation and outcome.observation.startswith("Error:")


def test_delete_refuses_when_the_file_changed_after_the_preview_S6(project: Path) -> None:
    _, delete = write_tools(project)
    assert delete.preview is not None
    call = ready(delete, path="app.py")
    shown = delete.preview(call.arguments)
    (project / "app.py").write_text("y = 2\n")  # same size, other content
    outcome = execute(call)
    assert "changed" in outcome.observation and "not deleted" in outcome.observation
    assert (project / "app.py").read_text() == "y = 2\n"
    with pytest.raises(ToolError, match="changed since it was approved"):
        delete.confirm(call.arguments, shown)


def test_delete_refuses_a_file_replaced_by_another_with_the_same_content_S6(
    project: Path,
) -> None:
    _, delete = write_tools(project)
    assert delete.preview is not None
    call = ready(delete, path="app.py")
    delete.preview(call.arguments)
    os.replace(project / "app.py", project / "moved.py")
    (project / "app.py").write_text("x = 1\n")  # same bytes, another inode
    outcome = execute(call)
    assert outcome.observation.startswith("Error:")
    assert (project / "app.py").exists() and (project / "moved.py").exists()


# -- hard links and secret folders (issue 26 item 6) ------------------------------------


@pytest.fixture
def outside_secret(tmp_path: Path) -> Path:
    """A passwd-like file outside the project, on the same file system."""
    secret = tmp_path / "outside" / "shadow.txt"
    secret.write_text("root:$6$s3cr3thash:19000:0:99999:7:::\n")
    return secret


@pytest.mark.parametrize("name", ["notes.txt", "docs/readme.md", "tests/test_x.py"])
def test_a_hard_link_to_a_file_outside_the_project_is_not_read_S1(
    project: Path, outside_secret: Path, name: str
) -> None:
    target = project / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    os.link(outside_secret, target)
    read, _ = file_tools(project)
    outcome = execute(ready(read, path=name))
    assert outcome.observation.startswith("Error:"), outcome.observation
    assert "hard link" in outcome.observation
    assert "s3cr3thash" not in outcome.observation


def test_a_write_preview_does_not_show_a_hard_linked_outside_file_S1(
    project: Path, outside_secret: Path
) -> None:
    """The diff of write_file would print the outside file's content to the person."""
    os.link(outside_secret, project / "config.txt")
    write, _ = write_tools(project)
    call = ready(write, path="config.txt", content="new")
    assert call.tool.preview is not None
    with pytest.raises(ToolError, match="hard link"):
        call.tool.preview(call.arguments)


def test_a_hard_link_inside_the_project_to_a_secret_is_not_read_S2(project: Path) -> None:
    (project / ".env").write_text("API_TOKEN=abc123secretvalue\n")
    os.link(project / ".env", project / "settings.txt")
    read, _ = file_tools(project)
    outcome = execute(ready(read, path="settings.txt"))
    assert outcome.observation.startswith("Error:"), outcome.observation
    assert "abc123secretvalue" not in outcome.observation


def test_a_person_can_allow_hard_links_in_the_policy_file_S3(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "vendor").mkdir()
    (project / "vendor" / "lib.py").write_text("shared = 1\n")
    os.link(project / "vendor" / "lib.py", project / "lib_copy.py")
    rules = tmp_path / "policy.toml"
    rules.write_text('hard_links = ["vendor"]\n')
    monkeypatch.setenv("TAO_POLICY", str(rules))
    read, _ = file_tools(project)
    assert execute(ready(read, path="vendor/lib.py")).observation.startswith("shared = 1")
    assert "hard link" in execute(ready(read, path="lib_copy.py")).observation


def test_a_single_named_file_is_read_as_before_S1(project: Path) -> None:
    read, _ = file_tools(project)
    assert execute(ready(read, path="app.py")).observation.startswith("x = 1")


SECRET_FOLDERS = [
    ".ssh/config",
    "secrets/db.txt",
    "Secrets/db.txt",
    ".aws/credentials.txt",
    ".gnupg/pubring.txt",
    ".docker/config.json",
    "credentials/x.json",
    "deploy/credentials/prod.yaml",
    "app/.env/settings.py",
    "k8s/my-secrets/values.yaml",
    "passwords/list.txt",
    ".password-store/mail.txt",
    "SECRETS./db.txt",
]


@pytest.mark.parametrize("path", SECRET_FOLDERS)
def test_files_under_a_secret_named_folder_are_not_read_S2(project: Path, path: str) -> None:
    target = project / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("password = hunter2-very-secret\n")
    read, listing = file_tools(project)
    outcome = execute(ready(read, path=path))
    assert outcome.observation.startswith("Error:"), outcome.observation
    assert "hunter2" not in outcome.observation
    folder = path.rsplit("/", 1)[0]
    listed = execute(ready(listing, path=folder)).observation
    assert listed.startswith("Error:"), listed
    assert target.name not in listed


def test_a_link_to_a_secret_folder_does_not_open_it_S2(project: Path) -> None:
    (project / "secrets").mkdir()
    (project / "secrets" / "db.txt").write_text("password = hunter2\n")
    (project / "harmless").symlink_to(project / "secrets", target_is_directory=True)
    read, listing = file_tools(project)
    assert execute(ready(read, path="harmless/db.txt")).observation.startswith("Error:")
    assert execute(ready(listing, path="harmless")).observation.startswith("Error:")
    shown = execute(ready(listing, path=".")).observation
    assert "db.txt" not in shown and "secrets/" not in shown.split("\n")
