"""Fallback models (issue 31): the next model takes the request the first could not answer.

Real parts only: a closed port on 127.0.0.1 for the model that is down, the wire-replay
server (:mod:`tests.models.conftest`) speaking the Anthropic Messages API for the model
that answers, replay scripts for a text-protocol fallback, and the SQLite run log.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.models.test_anthropic import message

from tao import Status
from tao.agent import Agent
from tao.errors import ModelError, ModelUnreachableError
from tao.models.base import ModelRequest
from tao.models.fallback import FallbackModel
from tao.models.openai import OpenAIModel
from tao.models.replay import ReplayModel
from tao.store.factory import open_store


def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on: the primary model's server is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def down() -> OpenAIModel:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    return OpenAIModel("gpt-4o-mini", base_url=url, max_retries=0, timeout_s=5)


def script(tmp_path: Path, name: str, replies: list[Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(replies))
    return path


def test_a_run_whose_model_is_down_finishes_on_the_fallback_and_keeps_the_failure(
    wire: Any, tao_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Done-when of issue 31: the primary's server refuses connections; every step is
    answered by the fallback (another provider, native tool calling), each step names it
    and keeps why the primary failed, in the result and in the run log."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.base_url)
    call = {"type": "tool_use", "id": "t1", "name": "calculator"}
    wire.json(message([{**call, "input": {"expression": "17 * 23 + 4"}}], "tool_use"))
    finish = {"type": "tool_use", "id": "t2", "name": "finish", "input": {"answer": "395"}}
    wire.json(message([finish], "tool_use"))
    primary = down()
    agent = Agent([primary, "anthropic:claude-sonnet-5"], ["calc"])
    result = agent.run("What is 17 * 23 + 4?")

    assert (result.status, result.answer) == (Status.FINISHED, "395")
    assert [s.model for s in result.steps] == ["anthropic:claude-sonnet-5"] * 2
    for step in result.steps:
        assert len(step.model_failures) == 1
        assert f"cannot reach {primary.where}" in step.model_failures[0]
    assert result.usage.model_calls == 2  # one per step, whoever answered
    assert result.usage.input_tokens == 2 * 512
    with open_store() as store:
        stored = store.get_run(result.run_id)
    assert [s.model for s in stored.steps] == [s.model for s in result.steps]
    assert [s.model_failures for s in stored.steps] == [s.model_failures for s in result.steps]


def test_cli_fallback_model_mixes_a_native_primary_with_a_text_fallback(
    tao_cli: Callable[..., Any], tmp_path: Path
) -> None:
    """``--fallback-model``: an OpenAI primary (native tool calling) that is down, then a
    text-protocol replay script. The run speaks the protocol every model speaks (text), so
    either can answer any step; the JSON trace and ``tao runs show`` name the answering
    model and the failure before it."""
    answers = script(tmp_path, "text.json", ["Thought: add.\nAction: finish[4]"])
    result = tao_cli(
        "run", "What is 2+2?", "--tools", "calc", "--json",
        "--model", "openai:gpt-4o-mini",
        "--base-url", f"http://127.0.0.1:{closed_port()}/v1",
        "--fallback-model", f"replay:{answers}",
        env={"OPENAI_API_KEY": "k"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    run = result.json()
    assert (run["status"], run["answer"]) == ("finished", "4")
    (step,) = run["steps"]
    assert step["model"] == f"replay:{answers}"
    assert "cannot reach" in step["model_failures"][0]
    shown = tao_cli("runs", "show", run["run_id"])
    assert f"replay:{answers}" in shown.stdout and "cannot reach" in shown.stdout


def test_a_rejected_request_or_a_bad_reply_is_no_reason_to_fall_back(
    wire: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 400 (the request itself is wrong) fails as it would alone; a reply that does not
    parse gets a format reminder from the loop and the same model answers again."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.base_url)
    wire.json({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}, 400)
    spare = ReplayModel(script(tmp_path, "spare.json", ["Action: finish[never]"]))
    from tao.models.anthropic import AnthropicModel

    both = FallbackModel([AnthropicModel("claude-sonnet-5"), spare])
    with pytest.raises(ModelError) as raised:
        both.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    assert not isinstance(raised.value, ModelUnreachableError)
    assert spare.calls == 0

    babble = ReplayModel(script(tmp_path, "babble.json", ["no format at all", "Action: finish[4]"]))
    spare = ReplayModel(script(tmp_path, "spare2.json", ["Action: finish[never]"]))
    result = Agent([babble, spare], ["calc"], record=False).run("What is 2+2?")
    assert (result.status, result.answer) == (Status.FINISHED, "4")
    assert spare.calls == 0
    assert all(s.model is None and not s.model_failures for s in result.steps)


def test_when_no_model_answers_the_run_ends_in_error_naming_each_failure(tmp_path: Path) -> None:
    first, second = down(), down()
    result = Agent([first, second], ["calc"], record=False).run("task")
    assert result.status is Status.ERROR
    assert result.error is not None and "no model answered" in result.error
    assert first.where in result.error and second.where in result.error


def test_async_run_falls_back_too(wire: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.base_url)
    finish = {"type": "tool_use", "id": "t2", "name": "finish", "input": {"answer": "395"}}
    wire.json(message([finish], "tool_use"))
    agent = Agent([down(), "anthropic:claude-sonnet-5"], ["calc"], record=False)
    result = asyncio.run(agent.arun("What is 17 * 23 + 4?"))
    assert (result.status, result.answer) == (Status.FINISHED, "395")
    assert result.steps[0].model == "anthropic:claude-sonnet-5"
