"""Red team, redaction on the web page (SPEC S8, S11; issue 26 item 4): the page and its
JSON API show pending calls, thoughts and replies redacted, with what was hidden marked.

Shapes only: none of these is a real credential. (With the other redaction attacks in
tests/security/test_redteam_redaction.py; here for the ``ui`` server fixture.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tao.redact import REDACTED

OPENAI = "sk-proj-" + "Qw7Er9Ty" * 6
GITHUB = "ghp_" + "Zx8Cv6Bn4M" * 4
AWS = "AKIA" + "Q7W3E5R2T9Y4U6I1"
HIDDEN = "Hq7-vP2xL9kR"


def test_web_page_and_api_show_pending_calls_and_thoughts_redacted_S11(
    ui: Any, tao_cli: Callable[..., Any], replay: Callable[[list[str]], Path], tmp_path: Path
) -> None:
    """A run waits on a write whose content and Thought hold secrets: the page, the run's
    JSON and the list's JSON never show them, mark what was hidden, and approving still
    writes the real content (redaction never changes what an approved tool does)."""
    project = tmp_path / "proj"
    project.mkdir()
    content = f'OPENAI_API_KEY = "{OPENAI}"\nDB_PASSWORD = "{HIDDEN}"\n'
    call = json.dumps({"path": "settings.py", "content": content})
    script = replay(
        [
            f"Thought: I will store {GITHUB} and curl -u bob:{HIDDEN} for later.\n"
            f"Action: write_file[{call}]",
            "Action: finish[written]",
        ]
    )
    out = tao_cli(
        "run", f"save the key {AWS}", "--model", f"replay:{script}", "--tools", "files,write",
        "--project", str(project), "--no-input", "--json",
    )  # fmt: skip
    assert out.returncode == 4, out.stderr
    run_id = out.json()["run_id"]
    surfaces = {
        "page": ui.request(f"/runs/{run_id}").body,
        "index": ui.request("/").body,
        "run json": ui.request(f"/api/runs/{run_id}").body,
        "list json": ui.request("/api/runs").body,
    }
    for name, body in surfaces.items():
        for secret in (OPENAI, GITHUB, AWS, HIDDEN):
            assert secret not in body, (name, secret)
            assert json.dumps(secret)[1:-1] not in body, (name, secret)
    page = surfaces["page"]
    assert "Approval needed" in page and "settings.py" in page
    assert REDACTED in page and "values hidden" in page
    assert ui.decide(run_id).status == 303
    ui.server.resumer.wait(60)
    assert (project / "settings.py").read_text() == content
