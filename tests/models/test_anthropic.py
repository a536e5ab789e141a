"""The Anthropic backend against a real HTTP server replaying the Messages API (SPEC L7, M1)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tao import ModelUnavailableError, Status
from tao.errors import ModelError
from tao.models import load_model
from tao.models.anthropic import AnthropicModel
from tao.models.base import ModelRequest, ToolCall, ToolSpec

CALC = ToolSpec(
    "calculator",
    "Evaluate an arithmetic expression.",
    {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
)
EPHEMERAL = {"type": "ephemeral"}
QUESTION = [
    {"role": "system", "content": "You are a careful agent."},
    {"role": "user", "content": "What is 17 * 23 + 4?"},
]


def message(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> dict[str, Any]:
    """A Messages API response as the API returns it."""
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 412,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 100,
            "output_tokens": 58,
            "service_tier": "standard",
        },
    }


def use(call_id: str, expression: str) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": "calculator",
        "input": {"expression": expression},
    }


def events(*pairs: tuple[str, dict[str, Any]]) -> list[str]:
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in pairs]


def streamed_reply(
    texts: tuple[str, ...] = ("I will ", "compute it."),
    call: tuple[str, str] = ("toolu_01", "calculator"),
    pieces: tuple[str, ...] = ('{"expression', '": "17 * 23', ' + 4"}'),
) -> list[str]:
    """A streamed reply: text deltas, then a tool_use whose JSON arrives in pieces."""
    start = message([], stop_reason="end_turn")
    start.update(stop_reason=None, usage={"input_tokens": 412, "output_tokens": 1})
    return events(
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ("ping", {"type": "ping"}),
        *(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": t},
                },
            )
            for t in texts
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": call[0],
                    "name": call[1],
                    "input": {},
                },
            },
        ),
        *(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
            )
            for piece in pieces
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 61},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )


def model(wire: Any, **options: Any) -> AnthropicModel:
    return AnthropicModel(
        "claude-sonnet-5", base_url=wire.base_url, api_key="sk-ant-test", **options
    )


def test_text_reply_and_what_the_sdk_sent(wire: Any) -> None:
    wire.json(message([{"type": "text", "text": "Thought: multiply first."}]))
    reply = model(wire).complete(
        ModelRequest(messages=QUESTION, stop=["Observation:"], temperature=0.0, max_tokens=300)
    )
    assert reply.text == "Thought: multiply first."
    assert (reply.input_tokens, reply.output_tokens, reply.finish_reason) == (512, 58, "stop")
    sent = wire.sent[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["authorization"] == "Bearer sk-ant-test"
    assert sent.body == {
        "model": "claude-sonnet-5",
        "max_tokens": 300,
        "system": [
            {"type": "text", "text": "You are a careful agent.", "cache_control": EPHEMERAL}
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": QUESTION[1]["content"], "cache_control": EPHEMERAL}
                ],
            }
        ],
        "stop_sequences": ["Observation:"],
        "temperature": 0.0,
    }


def test_max_tokens_defaults_because_anthropic_requires_it(wire: Any) -> None:
    wire.json(message([{"type": "text", "text": "hi"}]))
    model(wire).complete(ModelRequest(messages=QUESTION))
    assert wire.bodies[0]["max_tokens"] == 1024
    assert "stop_sequences" not in wire.bodies[0]


def test_tool_call_and_the_tools_schema(wire: Any) -> None:
    wire.json(message([use("toolu_01", "17 * 23 + 4")], stop_reason="tool_use"))
    reply = model(wire).complete(ModelRequest(messages=QUESTION, tools=[CALC]))
    assert reply.text == ""
    assert reply.finish_reason == "tool_calls"
    assert reply.tool_calls == (
        ToolCall(
            "toolu_01", "calculator", {"expression": "17 * 23 + 4"}, '{"expression": "17 * 23 + 4"}'
        ),
    )
    assert wire.bodies[0]["tools"] == [
        {
            "name": "calculator",
            "description": "Evaluate an arithmetic expression.",
            "input_schema": CALC.parameters,
            "cache_control": EPHEMERAL,  # the tools are part of the stable prefix
        }
    ]


def test_parallel_calls_and_their_results_translated_back(wire: Any) -> None:
    wire.json(
        message(
            [
                {"type": "text", "text": "Both at once."},
                use("toolu_01", "17*23"),
                use("toolu_02", "2+2"),
            ],
            stop_reason="tool_use",
        )
    )
    wire.json(message([{"type": "text", "text": "Final Answer: 391 and 4"}]))
    anthropic = model(wire)
    first = anthropic.complete(ModelRequest(messages=QUESTION, tools=[CALC]))
    assert [(c.id, c.arguments["expression"]) for c in first.tool_calls] == [
        ("toolu_01", "17*23"),
        ("toolu_02", "2+2"),
    ]
    history = [
        *QUESTION,
        {
            "role": "assistant",
            "content": "Both at once.",
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.raw_arguments},
                }
                for c in first.tool_calls
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_01", "content": "391"},
        {"role": "tool", "tool_call_id": "toolu_02", "content": "4"},
    ]
    second = anthropic.complete(ModelRequest(messages=history, tools=[CALC]))
    assert second.text == "Final Answer: 391 and 4"
    assert wire.bodies[1]["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Both at once."},
                use("toolu_01", "17*23"),
                use("toolu_02", "2+2"),
            ],
        },
        {  # consecutive tool results: one user turn
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "391"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_02",
                    "content": "4",
                    "cache_control": EPHEMERAL,  # the transcript's end: the next prefix
                },
            ],
        },
    ]


def test_streamed_reply_reaches_on_text_in_order(wire: Any) -> None:
    wire.sse(streamed_reply())
    deltas: list[str] = []
    reply = model(wire).complete(
        ModelRequest(messages=QUESTION, tools=[CALC]), on_text=deltas.append
    )
    assert deltas == ["I will ", "compute it."]
    assert reply.text == "I will compute it."
    assert reply.tool_calls[0].arguments == {"expression": "17 * 23 + 4"}
    assert (reply.input_tokens, reply.output_tokens, reply.finish_reason) == (
        412,
        61,
        "tool_calls",
    )
    assert wire.bodies[0]["stream"] is True


def test_async_text_tool_call_and_stream(wire: Any) -> None:
    wire.json(message([{"type": "text", "text": "async hi"}]))
    wire.json(message([use("toolu_09", "1+1")], stop_reason="tool_use"))
    wire.sse(streamed_reply())
    anthropic = model(wire)

    async def main() -> list[Any]:
        deltas: list[str] = []
        text = await anthropic.acomplete(ModelRequest(messages=QUESTION, stop=["Observation:"]))
        call = await anthropic.acomplete(ModelRequest(messages=QUESTION, tools=[CALC]))
        streamed = await anthropic.acomplete(ModelRequest(messages=QUESTION), on_text=deltas.append)
        return [text, call, streamed, deltas]

    text, call, streamed, deltas = asyncio.run(main())
    assert text.text == "async hi"
    assert call.tool_calls[0].id == "toolu_09"
    assert streamed.text == "I will compute it." and deltas == ["I will ", "compute it."]
    assert wire.bodies[0]["stop_sequences"] == ["Observation:"]


def test_error_status_is_one_clear_line(wire: Any) -> None:
    wire.json(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "messages: at least one message is required",
            },
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
        },
        status=400,
    )
    with pytest.raises(ModelError, match="rejected the request: messages: at least one message"):
        model(wire).complete(ModelRequest(messages=QUESTION))


def test_bad_key_and_async_errors(wire: Any) -> None:
    wire.json(
        {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        },
        status=401,
    )
    wire.json({"type": "error", "error": {"type": "api_error", "message": "Internal"}}, status=500)
    anthropic = model(wire, max_retries=0)
    with pytest.raises(ModelError, match="API key was rejected \\(invalid x-api-key\\)"):
        anthropic.complete(ModelRequest(messages=QUESTION))
    with pytest.raises(ModelError, match="server answered 500 \\(Internal\\)"):
        asyncio.run(anthropic.acomplete(ModelRequest(messages=QUESTION)))


def test_rate_limit_is_retried_by_the_sdk(wire: Any) -> None:
    limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    wire.json(limited, status=429, headers={"retry-after-ms": "1"})
    wire.json(message([{"type": "text", "text": "after the wait"}]))
    assert model(wire).complete(ModelRequest(messages=QUESTION)).text == "after the wait"
    assert len(wire.sent) == 2 and wire.bodies[0] == wire.bodies[1]
    wire.json(limited, status=429, headers={"retry-after-ms": "1"})
    with pytest.raises(ModelError, match="rate limited"):
        model(wire, max_retries=0).complete(ModelRequest(messages=QUESTION))


def test_model_that_refuses_temperature_is_asked_again_without_it(wire: Any) -> None:
    wire.json(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "`temperature` is deprecated for this model.",
            },
        },
        status=400,
    )
    wire.json(message([{"type": "text", "text": "ok"}]))
    wire.json(message([{"type": "text", "text": "ok again"}]))
    anthropic = model(wire)
    assert anthropic.complete(ModelRequest(messages=QUESTION)).text == "ok"
    assert anthropic.complete(ModelRequest(messages=QUESTION)).text == "ok again"
    assert "temperature" in wire.bodies[0]
    assert all("temperature" not in body for body in wire.bodies[1:])


def test_native_async_run_end_to_end(wire: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from tao.agent import Agent

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")  # the run config holds no secrets
    wire.json(message([use("toolu_01", "17 * 23 + 4")], stop_reason="tool_use"))
    finish = {"type": "tool_use", "id": "toolu_02", "name": "finish", "input": {"answer": "395"}}
    wire.json(message([finish], stop_reason="tool_use"))
    agent = Agent("anthropic:claude-sonnet-5", ["calc"], base_url=wire.base_url, record=False)
    result = asyncio.run(agent.arun("What is 17 * 23 + 4?"))
    assert (result.status, result.answer) == (Status.FINISHED, "395")
    tools = [tool["name"] for tool in wire.bodies[0]["tools"]]
    assert "calculator" in tools and "finish" in tools
    assert wire.bodies[1]["messages"][-1]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": "395",
        "cache_control": EPHEMERAL,
    }


def test_missing_key_is_one_clear_line() -> None:
    with pytest.raises(ModelUnavailableError, match="set ANTHROPIC_API_KEY"):
        load_model("anthropic:claude-sonnet-5")


def test_spec_and_key_from_the_environment(wire: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    loaded = load_model("anthropic:claude-haiku-5-5", base_url=wire.base_url)
    assert isinstance(loaded, AnthropicModel) and loaded.name == "anthropic:claude-haiku-5-5"
    assert loaded.supports_tools and loaded.supports_stop and not loaded.supports_grammar
    wire.json(message([{"type": "text", "text": "hi"}]))
    assert loaded.complete(ModelRequest(messages=QUESTION)).text == "hi"
    assert wire.sent[0].headers["authorization"] == "Bearer sk-ant-env"


def test_streamed_native_run_shows_text_as_it_arrives(
    wire: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tao.agent import Agent

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")  # the run config holds no secrets
    from tao.events import FinalEvent, TextDelta

    wire.sse(streamed_reply())
    wire.sse(streamed_reply(("Done.",), ("toolu_02", "finish"), ('{"answer": ', '"395"}')))
    agent = Agent("anthropic:claude-sonnet-5", ["calc"], base_url=wire.base_url, record=False)
    events = list(agent.stream("What is 17 * 23 + 4?"))
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts == ["I will ", "compute it.", "Done."]
    assert isinstance(events[-1], FinalEvent)
    assert (events[-1].result.status, events[-1].result.answer) == (Status.FINISHED, "395")


def test_unreachable_server_names_the_host() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    anthropic = AnthropicModel(
        "claude-sonnet-5", base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0
    )
    with pytest.raises(ModelError, match=f"cannot reach http://127.0.0.1:{port}"):
        anthropic.complete(ModelRequest(messages=QUESTION))


def test_cache_reads_and_writes_are_priced_at_their_rates(wire: Any) -> None:
    """Issue 15: the reply's cost is the price table's, cache reads and writes at their rates."""
    from genai_prices import Usage, calc_price

    body = message([{"type": "text", "text": "Thought: multiply first."}])
    body["usage"].update(input_tokens=412, cache_creation_input_tokens=300)
    wire.json(body)
    reply = model(wire).complete(ModelRequest(messages=QUESTION))
    assert (reply.input_tokens, reply.cache_read_tokens, reply.cache_write_tokens) == (
        812,
        100,
        300,
    )
    usage = Usage(input_tokens=812, output_tokens=58, cache_read_tokens=100, cache_write_tokens=300)
    price = calc_price(usage, "claude-sonnet-5", provider_id="anthropic").total_price
    assert reply.cost_usd == float(price) > 0


def test_a_prompt_too_long_names_the_window_issue_27(wire: Any) -> None:
    """Anthropic's refusal for size, through its SDK: the error names the limit, and a run
    learns its window from it (tao.models.window.overflow)."""
    from tao.models.window import Overflow, overflow

    wire.json(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 208310 tokens > 200000 maximum",
            },
        },
        status=400,
    )
    with pytest.raises(ModelError) as refused:
        model(wire).complete(ModelRequest(messages=QUESTION))
    assert overflow(str(refused.value)) == Overflow(200000, 208310)


def test_each_step_marks_the_stable_prefix_and_the_transcript_end_for_the_cache(
    wire: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31: a whole run's requests carry ``cache_control`` on the system prompt (its
    instructions and examples), on the last tool, and on the newest turn, and never more
    than the four breakpoints the API allows; the cached tokens reach the run's usage."""
    from tao.agent import Agent

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    cached = message([use("toolu_01", "17 * 23 + 4")], stop_reason="tool_use")
    cached["usage"] = {
        "input_tokens": 20,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 1500,
        "output_tokens": 30,
    }
    wire.json(cached)
    finish = {"type": "tool_use", "id": "toolu_02", "name": "finish", "input": {"answer": "395"}}
    wire.json(message([finish], stop_reason="tool_use"))
    agent = Agent("anthropic:claude-sonnet-5", ["calc"], base_url=wire.base_url, record=False)
    result = agent.run("What is 17 * 23 + 4?")
    assert (result.status, result.answer) == (Status.FINISHED, "395")
    for body in wire.bodies:
        system, tools, turns = body["system"], body["tools"], body["messages"]
        assert system[-1]["cache_control"] == EPHEMERAL
        assert "17 * 23 + 4" not in system[-1]["text"]  # the task is not the stable prefix
        assert tools[-1]["cache_control"] == EPHEMERAL
        assert turns[-1]["content"][-1]["cache_control"] == EPHEMERAL
        marked = json.dumps(body).count('"cache_control"')
        assert marked == 3
    # the second request's newest turn is the tool result: the first request's end is
    # now inside the prefix, where the cache finds it
    assert wire.bodies[1]["messages"][-1]["content"][-1]["type"] == "tool_result"
    assert result.usage.input_tokens == 1520 + 512


def test_a_server_that_refuses_cache_control_is_asked_again_without_it(wire: Any) -> None:
    """A proxy that rejects ``cache_control`` by name costs one retry, then none."""
    wire.json(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "cache_control: Extra inputs are not permitted",
            },
        },
        400,
    )
    wire.json(message([{"type": "text", "text": "hi"}]))
    wire.json(message([{"type": "text", "text": "again"}]))
    anthropic = model(wire)
    assert anthropic.complete(ModelRequest(messages=QUESTION)).text == "hi"
    assert anthropic.complete(ModelRequest(messages=QUESTION)).text == "again"
    assert "cache_control" in json.dumps(wire.bodies[0])
    assert all("cache_control" not in json.dumps(body) for body in wire.bodies[1:])
