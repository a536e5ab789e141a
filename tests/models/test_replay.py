"""The replay backend: scripted replies for reproducible runs (SPEC M1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tao import ModelSpecError
from tao.errors import ModelError
from tao.models import ModelRequest, load_model


def test_replies_are_consumed_in_order_then_a_clear_error(tmp_path: Path) -> None:
    script = tmp_path / "r.json"
    script.write_text('["one", "two"]')
    model = load_model(f"replay:{script}")
    assert [model.complete(ModelRequest(messages=[])).text for _ in range(2)] == ["one", "two"]
    with pytest.raises(ModelError, match=r"no reply left for model call 3 \(it holds 2\)"):
        model.complete(ModelRequest(messages=[]))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "replay file not found"),
        ("[1, 2]", "reply 1: must be a string or"),
        ('["ok", {"tool_calls": [{"arguments": {}}]}]', "reply 2: must be a string or"),
        ('{"a": 1}', "must hold a JSON array of reply strings"),
        ('["ok",\n oops]', r"is not valid JSON \(line 2, column 2\)"),
    ],
)
def test_bad_replay_files_are_clear_errors(
    tmp_path: Path, content: str | None, message: str
) -> None:
    script = tmp_path / "r.json"
    if content is not None:
        script.write_text(content)
    with pytest.raises(ModelSpecError, match=message):
        load_model(f"replay:{script}")
