"""Red team, secrets and hostile characters on the web page's every channel (SPEC S8, S9;
issue 26 round 3): the page, the runs list, their JSON API and the server-sent events
that keep them live, for a finished run whose test printed a ``--pass-env`` value, whose
task held a key and whose Thought held escapes and a bidi override.

Shapes only: none of these is a real credential.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tao.redact.known import forget_all

VALUE = "Zq7hunter2horse"
OPENAI = "sk-proj-" + "Qw7Er9Ty" * 6
GITHUB = "ghp_" + "Zx8Cv6Bn4M" * 4
HOSTILE = ("\x1b]52;c;ZXZpbA==\x07", "\x1b[2J", "\u202e", "\u2066", "\x9b")


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    forget_all()
    yield
    forget_all()


def test_every_channel_of_the_web_page_hides_known_and_shaped_secrets_S8(
    ui: Any, tao_cli: Callable[..., Any], replay: Callable[[list[str]], Path], tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "test_env.py").write_text(
        'import os\n\ndef test_env():\n    print(os.environ["MY_SETTING"])\n    assert False\n'
    )
    thought = f"Thought: I keep {GITHUB} \x1b]52;c;ZXZpbA==\x07 \x1b[2J \u202eevil \u2066x \x9by"
    script = replay([f"{thought}\nAction: run_tests[test_env.py]", "Action: finish[done]"])
    out = tao_cli(
        "run", f"check with {OPENAI}", "--model", f"replay:{script}", "--tools", "tests",
        "--project", str(project), "--pass-env", "MY_SETTING", "--json",
        env={"MY_SETTING": VALUE},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run_id = out.json()["run_id"]
    surfaces = {
        "page": ui.request(f"/runs/{run_id}").body,
        "index": ui.request("/").body,
        "run json": ui.request(f"/api/runs/{run_id}").body,
        "list json": ui.request("/api/runs").body,
        "run events": ui.request(f"/live/runs/{run_id}").body,
    }
    assert "test_env" in surfaces["page"] and "event: update" in surfaces["run events"]
    for name, body in surfaces.items():
        for secret in (VALUE, OPENAI, GITHUB):
            assert secret not in body, (name, secret)
            assert json.dumps(secret)[1:-1] not in body, (name, secret)
        if name in ("page", "index", "run events"):  # HTML; the JSON API carries data
            for raw in HOSTILE:
                assert raw not in body, (name, raw)
