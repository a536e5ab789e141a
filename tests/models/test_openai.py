"""The OpenAI backend against a real HTTP server on 127.0.0.1 (SPEC M1, L3)."""

from __future__ import annotations

from typing import Any

import pytest

from tao import Agent, ModelUnavailableError, Status
from tao.errors import ModelError
from tao.models import load_model
from tao.models.openai import OpenAIModel


def test_messages_stop_and_temperature_arrive_as_sent_L3(chat_server: Any) -> None:
    chat_server.replies = [
        "Thought: compute\nAction: calculator[17 * 23 + 4]",
        "Thought: done\nAction: finish[395]",
    ]
    agent = Agent(
        "openai:qwen2.5", ["calc"], base_url=chat_server.base_url, record=False, temperature=0.0
    )
    result = agent.run("What is 17 * 23 + 4?")
    assert (result.status, result.answer) == (Status.FINISHED, "395")
    assert chat_server.paths == ["/v1/chat/completions"] * 2
    first, second = chat_server.requests
    assert first["model"] == "qwen2.5"
    assert first["temperature"] == 0.0
    assert first["stop"] == ["Observation:", "Observation："]
    assert first["max_tokens"] == 512
    assert first["messages"] == result.steps[0].model_input
    assert second["messages"] == result.steps[1].model_input
    assert second["messages"][-1] == {"role": "user", "content": "Observation: 395"}
    # Usage comes from the server's own counts.
    assert result.usage.input_tokens == sum(s.input_tokens for s in result.steps) > 0


def test_stop_sequence_follows_the_language_L3_L8(chat_server: Any) -> None:
    chat_server.replies = ["考え：終わり\n答え：144"]
    Agent("openai:m", ["calc"], base_url=chat_server.base_url, lang="ja", record=False).run(
        "12*12?"
    )
    assert chat_server.requests[0]["stop"] == ["観察:", "観察："]


def test_server_that_rejects_stop_gets_a_client_side_cut_L3(chat_server: Any) -> None:
    rejection = (
        400,
        {
            "error": {
                "message": "Unsupported parameter: 'stop' is not supported with this model.",
                "type": "invalid_request_error",
                "param": "stop",
                "code": "unsupported_parameter",
            }
        },
    )
    chat_server.replies = [
        rejection,
        "Thought: t\nAction: calculator[2+2]\nObservation: 5\nAction: finish[5]",
        "Action: finish[4]",
    ]
    result = Agent("openai:o4-mini", ["calc"], base_url=chat_server.base_url, record=False).run(
        "2+2?"
    )
    assert result.answer == "4"
    assert "stop" in chat_server.requests[0]
    assert all("stop" not in r for r in chat_server.requests[1:])
    assert (
        chat_server.requests[2]["messages"][-2]["content"] == "Thought: t\nAction: calculator[2+2]"
    )


def test_server_error_is_a_clear_model_error(chat_server: Any) -> None:
    chat_server.replies = [(503, {"error": {"message": "overloaded", "type": "server_error"}})]
    model = OpenAIModel("m", base_url=chat_server.base_url, max_retries=0)
    with pytest.raises(ModelError, match="server answered 503 \\(overloaded\\)"):
        model.complete([{"role": "user", "content": "hi"}])


def test_unreachable_server_ends_the_run_with_status_error() -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout_s=5)
    result = Agent(model, ["calc"], record=False).run("task")
    assert result.status is Status.ERROR
    assert result.error is not None and f"cannot reach http://127.0.0.1:{port}/v1" in result.error


def test_missing_key_without_base_url_is_one_clear_line() -> None:
    with pytest.raises(ModelUnavailableError, match="set OPENAI_API_KEY"):
        load_model("openai:gpt-4o-mini")


def test_key_and_base_url_from_the_environment(
    chat_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-from-env")
    chat_server.replies = ["Final Answer: hi"]
    reply = load_model("openai:gpt-4o-mini").complete([{"role": "user", "content": "hi"}])
    assert reply.text == "Final Answer: hi"
