"""Red team, the policy file and its rules (SPEC S3, S6; issue 26 item 6).

The project and the model are the attacker: the project may ship a policy file
that grants its own writes, and the model picks paths that a folder rule seems
to cover (a sibling named like the folder, ``..``, another case, a symlinked
folder). Real files, real symlinks, the real ``tao`` in a child process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.calls import ready

from tao.agent import Agent
from tao.approval.policy import Policy, PolicyError, ProjectPolicyError, path_covered
from tao.tools.base import Tool
from tao.tools.write import write_tools

Replay = Callable[[list[str]], Path]


@pytest.fixture(autouse=True)
def _untrusted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each case starts with nobody vouching for a project policy."""
    monkeypatch.delenv("TAO_TRUST_PROJECT_POLICY", raising=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for folder in ("src/deep", "src_evil", "SRC", "tests", "srcx"):
        (root / folder).mkdir(parents=True)
    (root / "app.py").write_text("x = 1\n")
    return root


def rules(tmp_path: Path, text: str) -> Policy:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return Policy.load(path)


def covers(policy: Policy, tool: Tool, path: str) -> bool:
    call = ready(tool, path=path, content="x")
    return policy.allows(call.tool, call.arguments) is not None


FOLDER_FORMS = ["src", "src/", "src/**", "./src", "src//", "./src/"]


@pytest.mark.parametrize("form", FOLDER_FORMS)
def test_a_folder_rule_covers_everything_under_the_folder_in_every_spelling_S3(
    project: Path, tmp_path: Path, form: str
) -> None:
    write, _ = write_tools(project)
    policy = rules(tmp_path, f'[[allow]]\ntool = "write_file"\npath = "{form}"\n')
    for inside in ["src/a.py", "src/deep/b.py", "src/new/dir/c.txt", "./src/x/../d.py"]:
        assert covers(policy, write, inside), (form, inside)


@pytest.mark.parametrize("form", FOLDER_FORMS)
@pytest.mark.parametrize(
    "outside",
    [
        "src_evil/x.py",  # named like the folder, plus a suffix
        "srcx/x.py",
        "src.py",
        "SRC/x.py",  # another folder on a case-sensitive file system
        "tests/src/x.py",  # a folder of the same name elsewhere
        "src/../app.py",
        "src/deep/../../tests/t.py",
        "app.py",
    ],
)
def test_a_folder_rule_covers_nothing_outside_the_folder_S6(
    project: Path, tmp_path: Path, form: str, outside: str
) -> None:
    write, _ = write_tools(project)
    policy = rules(tmp_path, f'[[allow]]\ntool = "write_file"\npath = "{form}"\n')
    assert not covers(policy, write, outside), (form, outside)


def test_a_symlinked_folder_is_judged_by_where_it_leads_S6(project: Path, tmp_path: Path) -> None:
    """``src/gen`` -> ``tests``: a rule for ``src`` does not reach tests/ through it;
    ``alias`` -> ``src``: the write lands in src/, so the rule for src covers it."""
    (project / "src" / "gen").symlink_to(project / "tests", target_is_directory=True)
    (project / "alias").symlink_to(project / "src", target_is_directory=True)
    write, _ = write_tools(project)
    policy = rules(tmp_path, '[[allow]]\ntool = "write_file"\npath = "src"\n')
    assert not covers(policy, write, "src/gen/test_evil.py")
    assert covers(policy, write, "alias/ok.py")
    assert ready(write, path="alias/ok.py", content="x").arguments["path"] == "src/ok.py"


def test_a_wildcard_last_part_does_not_reach_into_a_folder_it_matches_S3() -> None:
    """``*.py`` names Python files: a folder ``x.py/`` does not bring its content with it."""
    assert path_covered("*.py", "a.py")
    assert not path_covered("*.py", "x.py/run.sh")
    assert not path_covered("*.py", "src/a.py")  # * stays in one folder
    assert path_covered("src/*", "src/a.py")
    assert not path_covered("src/*", "src/deep/b.py")
    assert path_covered("**/*.py", "src/deep/b.py")
    assert path_covered("src/deep", "src/deep/b.py")
    assert not path_covered("src/deep", "src/deeper/b.py")
    assert not path_covered("src", "src_evil")


@pytest.mark.parametrize(
    "pattern", ["../outside/**", "src/../../x", "/etc/**", "~/x", "src\\\\x", "..", "a/.."]
)
def test_a_rule_that_leaves_the_project_is_an_error_not_a_silent_dead_rule_S3(
    tmp_path: Path, pattern: str
) -> None:
    with pytest.raises(PolicyError, match="rule 1"):
        rules(tmp_path, f'[[allow]]\ntool = "write_file"\npath = "{pattern}"\n')


# -- a policy file inside the project ---------------------------------------------------


def agent(project: Path, **kwargs: Any) -> Agent:
    return Agent(
        "replay:" + str(_script(project)), ["write"], project=str(project), record=False, **kwargs
    )


def _script(project: Path) -> Path:
    path = project.parent / "script.json"
    path.write_text(json.dumps(["Action: finish[done]"]))
    return path


GRANT = '[[allow]]\ntool = "write_file"\n'


@pytest.mark.parametrize(
    "where", ["policy.toml", ".tao/policy.toml", "deep/er/p.toml", "link-to-project/p.toml"]
)
def test_a_policy_file_inside_the_project_is_refused_S3(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str
) -> None:
    (tmp_path / "link-to-project").symlink_to(project, target_is_directory=True)
    base = tmp_path if where.startswith("link") else project
    file = base / where
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(GRANT)
    monkeypatch.setenv("TAO_POLICY", str(file))
    monkeypatch.chdir(project)
    with pytest.raises(ProjectPolicyError) as caught:
        agent(project)
    assert str(file) in str(caught.value)
    assert "--trust-project-policy" in str(caught.value)
    # the same file passed explicitly is refused too
    with pytest.raises(ProjectPolicyError):
        agent(project, policy=Policy.load(file))


def test_a_relative_tao_home_resolving_into_the_project_is_refused_S3(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TAO_HOME=.tao`` makes every folder tao runs in choose its own policy."""
    (project / ".tao").mkdir()
    (project / ".tao" / "policy.toml").write_text(GRANT)
    monkeypatch.setenv("TAO_HOME", ".tao")
    monkeypatch.delenv("TAO_POLICY", raising=False)
    monkeypatch.chdir(project)
    with pytest.raises(ProjectPolicyError, match=r"policy\.toml"):
        agent(project)


def test_trusting_the_project_policy_is_a_person_s_explicit_choice_S3(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (project / "policy.toml").write_text(GRANT)
    monkeypatch.setenv("TAO_POLICY", str(project / "policy.toml"))
    assert agent(project, trust_project_policy=True).policy.rules
    monkeypatch.setenv("TAO_TRUST_PROJECT_POLICY", "1")
    assert agent(project).policy.rules
    outside = tmp_path / "mine.toml"
    outside.write_text(GRANT)
    monkeypatch.delenv("TAO_TRUST_PROJECT_POLICY")
    monkeypatch.setenv("TAO_POLICY", str(outside))
    assert agent(project).policy.rules  # outside the project: used as before


WRITE = ['Action: write_file(path="pwned.txt", content="granted")', "Action: finish[done]"]


def test_cli_refuses_a_project_policy_and_writes_nothing_S3(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    (project / "policy.toml").write_text(GRANT)
    args = ["run", "x", "-m", f"replay:{replay(WRITE)}", "-t", "write", "--project", str(project)]
    env = {"TAO_POLICY": str(project / "policy.toml")}
    out = tao_cli(*args, "--no-input", cwd=project, env=env)
    assert out.returncode == 2, out.stderr
    assert str(project / "policy.toml") in out.stderr
    assert "--trust-project-policy" in out.stderr
    assert not (project / "pwned.txt").exists()
    trusted = tao_cli(*args, "--no-input", "--json", "--trust-project-policy", cwd=project, env=env)
    assert trusted.returncode == 0, trusted.stderr
    assert (project / "pwned.txt").read_text() == "granted"


def test_trusting_a_project_policy_lasts_one_command_never_the_run_log_S3(
    tao_cli: Any, replay: Replay, tmp_path: Path
) -> None:
    """The person's word covers the file as it was when they gave it: the run log does not
    record it (an approved write may change the file before the run resumes), so ``tao
    resume`` refuses the file again until the person says so again (issue 29: the setting
    is declared once, not recorded, and shown by ``tao run`` and ``tao resume``)."""
    project = tmp_path / "repo"
    project.mkdir()
    (project / "policy.toml").write_text(GRANT + 'path = "notes.txt"\n')  # not pwned.txt
    env = {"TAO_POLICY": str(project / "policy.toml")}
    run = ["run", "x", "-m", f"replay:{replay(WRITE)}", "-t", "write", "--project", str(project)]
    paused = tao_cli(*run, "--no-input", "--json", "--trust-project-policy", cwd=project, env=env)
    assert paused.returncode == 4, paused.stderr  # awaiting the person's approval
    run_id = json.loads(paused.stdout)["run_id"]
    assert tao_cli("runs", "approve", run_id, cwd=project, env=env).returncode == 0
    refused = tao_cli("resume", run_id, "--no-input", "--json", cwd=project, env=env)
    assert refused.returncode == 2, refused.stderr
    assert "--trust-project-policy" in refused.stderr
    assert not (project / "pwned.txt").exists()
    resumed = tao_cli(
        "resume", run_id, "--no-input", "--json", "--trust-project-policy", cwd=project, env=env
    )
    assert resumed.returncode == 0, resumed.stderr
    assert (project / "pwned.txt").read_text() == "granted"
