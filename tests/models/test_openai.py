"""The OpenAI backend against a real HTTP server on 127.0.0.1 (SPEC M1, L3)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from tests.fakes.http import recorded_chunks

from tao import ModelUnavailableError, Status
from tao.errors import ModelError
from tao.models import load_model
from tao.models.base import ModelRequest, ToolCall, ToolSpec
from tao.models.openai import OpenAIModel
from tao.models.sdk import Connection


def test_messages_stop_and_temperature_arrive_as_sent_L3(chat_server: Any) -> None:
    from tao.agent import Agent

    chat_server.replies = [
        "Thought: compute\nAction: calculator[17 * 23 + 4]",
        "Thought: done\nAction: finish[395]",
    ]
    agent = Agent(
        "openai:qwen2.5",
        ["calc"],
        base_url=chat_server.base_url,
        record=False,
        temperature=0.0,
        protocol="text",
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
    from tao.agent import Agent

    chat_server.replies = ["考え：終わり\n答え：144"]
    Agent(
        "openai:m",
        ["calc"],
        base_url=chat_server.base_url,
        lang="ja",
        record=False,
        protocol="text",
    ).run("12*12?")
    assert chat_server.requests[0]["stop"] == ["観察:", "観察："]


def test_server_that_rejects_stop_gets_a_client_side_cut_L3(chat_server: Any) -> None:
    from tao.agent import Agent

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
    result = Agent(
        "openai:o4-mini", ["calc"], base_url=chat_server.base_url, record=False, protocol="text"
    ).run("2+2?")
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
        model.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]))


def test_unreachable_server_ends_the_run_with_status_error() -> None:
    import socket

    from tao.agent import Agent

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
    reply = load_model("openai:gpt-4o-mini").complete(
        ModelRequest(messages=[{"role": "user", "content": "hi"}])
    )
    assert reply.text == "Final Answer: hi"


# -- native tool calling, streaming, async: the wire format replayed (SPEC L7) ---------------

CALC = ToolSpec(
    "calculator",
    "Evaluate an arithmetic expression.",
    {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
)
QUESTION = [
    {"role": "system", "content": "You are a careful agent."},
    {"role": "user", "content": "What is 17 * 23 + 4?"},
]
USAGE = {
    "prompt_tokens": 82,
    "completion_tokens": 18,
    "total_tokens": 100,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
}


def completion(
    content: str | None, calls: list[dict[str, Any]] | None = None, finish: str = "stop"
) -> dict[str, Any]:
    """A chat.completion object as the API returns it."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "refusal": None,
        "annotations": [],
    }
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-CN3mU6zYjYq2",
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": USAGE,
        "service_tier": "default",
        "system_fingerprint": "fp_560af6e559",
    }


def function(call_id: str, arguments: str, name: str = "calculator") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chunks(*deltas: dict[str, Any], finish: str = "stop") -> list[str]:
    """An SSE stream of chat.completion.chunk objects, usage last, then [DONE]."""
    return recorded_chunks(*deltas, usage=USAGE, finish=finish)


def streamed_tool_call() -> list[str]:
    return chunks(
        {"content": "I will "},
        {"content": "compute it."},
        {"tool_calls": [{"index": 0, **function("call_Abc1", "")}]},
        *(
            {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
            for piece in ('{"expression', '": "17 * 23', ' + 4"}')
        ),
        finish="tool_calls",
    )


def test_tool_call_and_the_tools_schema(wire: Any) -> None:
    wire.json(
        completion(None, [function("call_Abc1", '{"expression": "17 * 23 + 4"}')], "tool_calls")
    )

    class AsOpenAIItself(OpenAIModel):
        """No base_url, as for OpenAI itself, yet its client reaches the wire server."""

        def _client(self, connection: Connection) -> Any:
            return super()._client(replace(connection, base_url=f"{wire.base_url}/v1"))

    model = AsOpenAIItself("gpt-4o-mini", api_key="sk-test", max_retries=0)
    reply = model.complete(
        ModelRequest(messages=QUESTION, tools=[CALC], max_tokens=200, stop=["Observation:"])
    )
    assert reply.tool_calls == (
        ToolCall(
            "call_Abc1",
            "calculator",
            {"expression": "17 * 23 + 4"},
            '{"expression": "17 * 23 + 4"}',
        ),
    )
    assert (reply.text, reply.finish_reason, reply.input_tokens, reply.output_tokens) == (
        "",
        "tool_calls",
        82,
        18,
    )
    sent = wire.sent[0]
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body == {
        "model": "gpt-4o-mini",
        "messages": QUESTION,
        "temperature": 0.0,
        "max_completion_tokens": 200,  # OpenAI itself; compatible servers get max_tokens
        "stop": ["Observation:"],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "calculator",
                    "description": "Evaluate an arithmetic expression.",
                    "parameters": CALC.parameters,
                },
            }
        ],
    }


def test_parallel_calls_and_history_go_back_as_the_loop_wrote_them(wire: Any) -> None:
    calls = [function("call_1", '{"expression": "17*23"}'), function("call_2", '{"expression": ')]
    wire.json(completion("Both at once.", calls, "tool_calls"))
    wire.json(completion("Final Answer: 391"))
    model = OpenAIModel("qwen2.5", base_url=f"{wire.base_url}/v1")
    first = model.complete(ModelRequest(messages=QUESTION, tools=[CALC]))
    assert [c.id for c in first.tool_calls] == ["call_1", "call_2"]
    # JSON that does not decode: no exception, empty arguments, the text kept (L4).
    assert first.tool_calls[1].arguments == {}
    assert first.tool_calls[1].raw_arguments == '{"expression": '
    history = [
        *QUESTION,
        {"role": "assistant", "content": "Both at once.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_1", "content": "391"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: arguments are not JSON"},
    ]
    assert model.complete(ModelRequest(messages=history, tools=[CALC])).text == "Final Answer: 391"
    assert wire.bodies[1]["messages"] == history


def test_streamed_reply_assembles_text_calls_and_usage(wire: Any) -> None:
    wire.sse(streamed_tool_call())
    deltas: list[str] = []
    model = OpenAIModel("qwen2.5", base_url=f"{wire.base_url}/v1")
    reply = model.complete(ModelRequest(messages=QUESTION, tools=[CALC]), on_text=deltas.append)
    assert deltas == ["I will ", "compute it."]
    assert reply.text == "I will compute it."
    assert reply.tool_calls == (
        ToolCall(
            "call_Abc1",
            "calculator",
            {"expression": "17 * 23 + 4"},
            '{"expression": "17 * 23 + 4"}',
        ),
    )
    assert (reply.finish_reason, reply.input_tokens, reply.output_tokens) == ("tool_calls", 82, 18)
    assert wire.bodies[0]["stream"] is True
    assert wire.bodies[0]["stream_options"] == {"include_usage": True}


def test_async_text_tool_call_and_stream(wire: Any) -> None:
    wire.json(completion("async hi"))
    wire.json(completion(None, [function("call_9", '{"expression": "1+1"}')], "tool_calls"))
    wire.sse(chunks({"content": "Final "}, {"content": "Answer: 2"}))
    model = OpenAIModel("qwen2.5", base_url=f"{wire.base_url}/v1")

    async def main() -> list[Any]:
        deltas: list[str] = []
        text = await model.acomplete(
            ModelRequest(messages=QUESTION, stop=["Observation:"], max_tokens=64)
        )
        tool = await model.acomplete(ModelRequest(messages=QUESTION, tools=[CALC]))
        streamed = await model.acomplete(ModelRequest(messages=QUESTION), on_text=deltas.append)
        return [text, tool, streamed, deltas]

    text, tool, streamed, deltas = asyncio.run(main())
    assert (text.text, text.input_tokens) == ("async hi", 82)
    assert tool.tool_calls[0].arguments == {"expression": "1+1"}
    assert streamed.text == "Final Answer: 2" and deltas == ["Final ", "Answer: 2"]
    assert streamed.output_tokens == 18
    assert wire.bodies[0]["stop"] == ["Observation:"] and wire.bodies[0]["max_tokens"] == 64


def test_server_that_refuses_streaming_answers_whole_replies(wire: Any) -> None:
    refusal = {
        "error": {
            "message": "streaming is not supported together with tools",
            "type": "invalid_request_error",
            "param": "stream",
            "code": None,
        }
    }
    wire.json(refusal, status=400)
    wire.json(completion("Thought: whole"))
    wire.json(completion("again whole"))
    model = OpenAIModel("local", base_url=f"{wire.base_url}/v1")
    deltas: list[str] = []
    assert (
        model.complete(ModelRequest(messages=QUESTION, tools=[CALC]), on_text=deltas.append).text
        == "Thought: whole"
    )
    assert (
        asyncio.run(model.acomplete(ModelRequest(messages=QUESTION), on_text=deltas.append)).text
        == "again whole"
    )
    assert deltas == ["Thought: whole", "again whole"]  # once each, whole
    assert wire.bodies[0]["stream"] is True
    assert all("stream" not in body for body in wire.bodies[1:])


def test_client_error_and_async_errors_are_one_line(wire: Any) -> None:
    wire.json(
        {
            "error": {
                "message": "The model `gpt-9` does not exist or you do not have access to it.",
                "type": "invalid_request_error",
                "param": None,
                "code": "model_not_found",
            }
        },
        status=404,
    )
    wire.json(
        {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}},
        status=401,
    )
    model = OpenAIModel("gpt-9", base_url=f"{wire.base_url}/v1", max_retries=0)
    with pytest.raises(ModelError, match="not found \\(The model `gpt-9` does not exist"):
        model.complete(ModelRequest(messages=QUESTION))
    with pytest.raises(ModelError, match="API key was rejected \\(Incorrect API key provided\\)"):
        asyncio.run(model.acomplete(ModelRequest(messages=QUESTION), on_text=print))


def test_rate_limit_is_retried_by_the_sdk(wire: Any) -> None:
    limited = {
        "error": {
            "message": "Rate limit reached for gpt-4o-mini on tokens per min (TPM).",
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    wire.json(limited, status=429, headers={"retry-after-ms": "1"})
    wire.json(completion("after the wait"))
    model = OpenAIModel("gpt-4o-mini", base_url=f"{wire.base_url}/v1")
    assert model.complete(ModelRequest(messages=QUESTION)).text == "after the wait"
    assert len(wire.sent) == 2 and wire.bodies[0] == wire.bodies[1]
    assert wire.sent[1].headers["x-stainless-retry-count"] == "1"
    wire.json(limited, status=429, headers={"retry-after-ms": "1"})
    with pytest.raises(ModelError, match="rate limited"):
        OpenAIModel("m", base_url=f"{wire.base_url}/v1", max_retries=0).complete(
            ModelRequest(messages=QUESTION)
        )


def test_native_run_end_to_end(wire: Any) -> None:
    from tao.agent import Agent

    wire.json(completion(None, [function("call_1", '{"expression": "17 * 23 + 4"}')], "tool_calls"))
    wire.json(completion(None, [function("call_2", '{"answer": "395"}', "finish")], "tool_calls"))
    agent = Agent("openai:gpt-4o-mini", ["calc"], base_url=f"{wire.base_url}/v1", record=False)
    result = agent.run("What is 17 * 23 + 4?")
    assert (result.status, result.answer) == (Status.FINISHED, "395")
    assert "tools" in wire.bodies[0]
    assert wire.bodies[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "395",
    }


def test_streamed_native_run_shows_text_as_it_arrives(wire: Any) -> None:
    from tao.agent import Agent
    from tao.events import FinalEvent, TextDelta

    wire.sse(streamed_tool_call())
    finish = function("call_2", '{"answer": "395"}', "finish")
    wire.sse(chunks({"content": "Done."}, {"tool_calls": [{"index": 0, **finish}]}))
    agent = Agent("openai:gpt-4o-mini", ["calc"], base_url=f"{wire.base_url}/v1", record=False)
    events = list(agent.stream("What is 17 * 23 + 4?"))
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "I will ",
        "compute it.",
        "Done.",
    ]
    final = events[-1]
    assert isinstance(final, FinalEvent)
    result = final.result
    assert (result.status, result.answer) == (Status.FINISHED, "395")
    assert result.usage.input_tokens == 2 * 82


def test_missing_sdk_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.setitem(sys.modules, "google.genai", None)
    with pytest.raises(ModelUnavailableError, match=r"pip install 'tao\[anthropic\]'"):
        load_model("anthropic:claude-sonnet-5", api_key="k")
    with pytest.raises(ModelUnavailableError, match=r"pip install 'tao\[gemini\]'"):
        load_model("gemini:gemini-3.8-flash", api_key="k")


def test_each_run_keys_the_prompt_cache_with_its_own_id(wire: Any) -> None:
    """Issue 31: every request of a run carries ``prompt_cache_key`` = the run's id, so
    OpenAI routes the growing transcript to the cache that holds its prefix; another run
    has another key; a server that refuses the field by name is asked again without it."""
    from tao.agent import Agent

    agent = Agent("openai:gpt-4o-mini", ["calc"], base_url=f"{wire.base_url}/v1", record=False)
    runs = []
    for _ in range(2):
        wire.json(completion(None, [function("c1", '{"expression": "17 * 23 + 4"}')], "tool_calls"))
        wire.json(completion(None, [function("c2", '{"answer": "395"}', "finish")], "tool_calls"))
        runs.append(agent.run("What is 17 * 23 + 4?"))
    keys = [body["prompt_cache_key"] for body in wire.bodies]
    assert keys == [runs[0].run_id] * 2 + [runs[1].run_id] * 2
    assert runs[0].run_id != runs[1].run_id

    refused = {"error": {"message": "Unrecognized request argument: prompt_cache_key"}}
    wire.json(refused, 400)
    wire.json(completion("fine"))
    request = ModelRequest(messages=[{"role": "user", "content": "hi"}], cache_key="run-1")
    assert agent.model.complete(request).text == "fine"
    assert "prompt_cache_key" not in wire.bodies[-1]


def test_a_native_run_requires_a_tool_call_and_a_server_may_refuse_it_L7(wire: Any) -> None:
    """``finish`` is a tool in the native protocol, so every reply must call one: tao sends
    ``tool_choice: "required"`` (a plain-text reply could only be answered "called no
    tool"); a request without tools, or a text-protocol run, never carries it; a server
    that refuses the field by name is asked again without it, and not again after."""
    from tao.agent import Agent

    wire.json(completion(None, [function("c1", '{"expression": "17 * 23 + 4"}')], "tool_calls"))
    wire.json(completion(None, [function("c2", '{"answer": "395"}', "finish")], "tool_calls"))
    agent = Agent("openai:gpt-4o-mini", ["calc"], base_url=f"{wire.base_url}/v1", record=False)
    assert agent.run("What is 17 * 23 + 4?").answer == "395"
    assert [body.get("tool_choice") for body in wire.bodies] == ["required", "required"]

    wire.json(completion("Thought: done\nAction: finish[4]"))
    text = Agent(
        "openai:gpt-4o-mini", ["calc"], base_url=f"{wire.base_url}/v1", record=False,
        protocol="text",
    )  # fmt: skip
    assert text.run("2+2?").answer == "4"
    assert "tool_choice" not in wire.bodies[-1] and "tools" not in wire.bodies[-1]

    refused = {"error": {"message": "tool_choice 'required' is not supported by this server"}}
    wire.json(refused, 400)
    wire.json(completion(None, [function("c3", '{"answer": "4"}', "finish")], "tool_calls"))
    wire.json(completion(None, [function("c4", '{"answer": "5"}', "finish")], "tool_calls"))
    spec = ToolSpec("finish", "Finish.", {"type": "object", "properties": {}})
    request = ModelRequest(messages=QUESTION, tools=[spec], require_tool=True)
    model = OpenAIModel("m", base_url=f"{wire.base_url}/v1", max_retries=0)
    assert model.complete(request).tool_calls[0].arguments == {"answer": "4"}
    assert model.complete(request).tool_calls[0].arguments == {"answer": "5"}
    assert [b.get("tool_choice") for b in wire.bodies[-3:]] == ["required", None, None]
