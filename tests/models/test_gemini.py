"""The Gemini backend against a real HTTP server replaying generateContent (SPEC L7, M1)."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from tao import ModelUnavailableError, Status
from tao.errors import ModelError
from tao.models import load_model
from tao.models.base import ModelRequest, ToolSpec
from tao.models.gemini import GeminiModel

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
SIGNATURE = b"\x12\x0athought-signature"
PATH = "/v1/models/gemini-3.8-flash"


def response(
    parts: list[dict[str, Any]], finish: str | None = "STOP", usage: bool = True
) -> dict[str, Any]:
    """A GenerateContentResponse as the API returns it."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": "gemini-3.8-flash",
        "responseId": "n2C7aPqJB_2x1dkP2tqXgQM",
    }
    if usage:
        body["usageMetadata"] = {
            "promptTokenCount": 96,
            "candidatesTokenCount": 21,
            "totalTokenCount": 148,
            "thoughtsTokenCount": 31,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 96}],
        }
    return body


def call(expression: str, call_id: str | None = None, signed: bool = False) -> dict[str, Any]:
    function_call: dict[str, Any] = {"name": "calculator", "args": {"expression": expression}}
    if call_id:
        function_call["id"] = call_id
    part: dict[str, Any] = {"functionCall": function_call}
    if signed:
        part["thoughtSignature"] = base64.b64encode(SIGNATURE).decode()
    return part


def sse(*chunks: dict[str, Any]) -> list[str]:
    return [f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks]


def streamed_reply() -> list[str]:
    return sse(
        response([{"text": "I will "}], finish=None, usage=False),
        response([{"text": "compute it."}], finish=None, usage=False),
        response([call("17 * 23 + 4", "fc_1", signed=True)]),
    )


def model(wire: Any, **options: Any) -> GeminiModel:
    return GeminiModel("gemini-3.8-flash", base_url=wire.base_url, api_key="AIza-test", **options)


def test_text_reply_and_what_the_sdk_sent(wire: Any) -> None:
    wire.json(response([{"text": "Thought: multiply first."}]))
    reply = model(wire).complete(
        ModelRequest(messages=QUESTION, stop=["Observation:"], temperature=0.0, max_tokens=300)
    )
    assert reply.text == "Thought: multiply first."
    assert (reply.input_tokens, reply.output_tokens, reply.finish_reason) == (96, 52, "stop")
    sent = wire.sent[0]
    assert sent.path == f"{PATH}:generateContent"
    assert sent.headers["x-goog-api-key"] == "AIza-test"
    assert sent.body == {
        "contents": [{"role": "user", "parts": [{"text": "What is 17 * 23 + 4?"}]}],
        "systemInstruction": {"parts": [{"text": "You are a careful agent."}], "role": "user"},
        "generationConfig": {
            "temperature": 0.0,
            "maxOutputTokens": 300,
            "stopSequences": ["Observation:"],
        },
    }


def test_tool_call_and_the_tools_schema(wire: Any) -> None:
    wire.json(response([call("17 * 23 + 4", "fc_1")]))
    reply = model(wire).complete(ModelRequest(messages=QUESTION, tools=[CALC]))
    assert reply.finish_reason == "tool_calls"
    (only,) = reply.tool_calls
    assert (only.id, only.name, only.arguments) == (
        "fc_1",
        "calculator",
        {"expression": "17 * 23 + 4"},
    )
    assert json.loads(only.raw_arguments) == {"expression": "17 * 23 + 4"}
    (tools,) = wire.bodies[0]["tools"]
    (declaration,) = tools["functionDeclarations"]
    assert declaration["name"] == "calculator"
    assert declaration["description"] == "Evaluate an arithmetic expression."
    schema = declaration.get("parametersJsonSchema", declaration.get("parameters_json_schema"))
    assert schema == CALC.parameters


def test_parallel_calls_and_their_results_translated_back(wire: Any) -> None:
    # Gemini 2.x sends no call ids; Gemini 3 signs the first call of a turn.
    wire.json(response([{"text": "Both at once."}, call("17*23", signed=True), call("2+2")]))
    wire.json(response([{"text": "Final Answer: 391 and 4"}]))
    gemini = model(wire)
    first = gemini.complete(ModelRequest(messages=QUESTION, tools=[CALC]))
    assert [c.arguments["expression"] for c in first.tool_calls] == ["17*23", "2+2"]
    assert len({c.id for c in first.tool_calls}) == 2
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
        {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "391"},
        {"role": "tool", "tool_call_id": first.tool_calls[1].id, "content": "4"},
    ]
    assert (
        gemini.complete(ModelRequest(messages=history, tools=[CALC])).text
        == "Final Answer: 391 and 4"
    )
    signature = base64.b64encode(SIGNATURE).decode()
    assert wire.bodies[1]["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"text": "Both at once."},
                {  # made-up ids stay here; the signature goes back as received
                    "functionCall": {"name": "calculator", "args": {"expression": "17*23"}},
                    "thoughtSignature": signature,
                },
                {"functionCall": {"name": "calculator", "args": {"expression": "2+2"}}},
            ],
        },
        {  # both results in one turn, named after the calls they answer
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "calculator", "response": {"output": "391"}}},
                {"functionResponse": {"name": "calculator", "response": {"output": "4"}}},
            ],
        },
    ]


def test_calls_from_elsewhere_get_ids_back_and_a_placeholder_signature(wire: Any) -> None:
    wire.json(response([{"text": "done"}]))
    history = [
        *QUESTION,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "fc_7",
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": "1+1"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "fc_7", "content": "2"},
    ]
    model(wire).complete(ModelRequest(messages=history))
    model_turn, answer = wire.bodies[0]["contents"][1:]
    assert model_turn["parts"] == [
        {
            "functionCall": {"id": "fc_7", "name": "calculator", "args": {"expression": "1+1"}},
            "thoughtSignature": base64.b64encode(b"skip_thought_signature_validator").decode(),
        }
    ]
    assert answer["parts"] == [
        {"functionResponse": {"id": "fc_7", "name": "calculator", "response": {"output": "2"}}}
    ]


def test_streamed_reply_reaches_on_text_in_order(wire: Any) -> None:
    wire.sse(streamed_reply())
    deltas: list[str] = []
    reply = model(wire).complete(
        ModelRequest(messages=QUESTION, tools=[CALC]), on_text=deltas.append
    )
    assert deltas == ["I will ", "compute it."]
    assert reply.text == "I will compute it."
    assert reply.tool_calls[0].id == "fc_1"
    assert reply.tool_calls[0].arguments == {"expression": "17 * 23 + 4"}
    assert (reply.input_tokens, reply.output_tokens, reply.finish_reason) == (96, 52, "tool_calls")
    assert wire.sent[0].path == f"{PATH}:streamGenerateContent?alt=sse"


def test_async_text_tool_call_and_stream(wire: Any) -> None:
    wire.json(response([{"text": "async hi"}]))
    wire.json(response([call("1+1", "fc_9")]))
    wire.sse(streamed_reply())
    gemini = model(wire)

    async def main() -> list[Any]:
        deltas: list[str] = []
        text = await gemini.acomplete(ModelRequest(messages=QUESTION, stop=["Observation:"]))
        tool = await gemini.acomplete(ModelRequest(messages=QUESTION, tools=[CALC]))
        streamed = await gemini.acomplete(ModelRequest(messages=QUESTION), on_text=deltas.append)
        return [text, tool, streamed, deltas]

    text, tool, streamed, deltas = asyncio.run(main())
    assert text.text == "async hi"
    assert tool.tool_calls[0].id == "fc_9"
    assert streamed.text == "I will compute it." and deltas == ["I will ", "compute it."]
    assert wire.bodies[0]["generationConfig"]["stopSequences"] == ["Observation:"]


def test_error_status_is_one_clear_line(wire: Any) -> None:
    wire.json(
        {
            "error": {
                "code": 400,
                "message": "* GenerateContentRequest.contents: contents is not specified",
                "status": "INVALID_ARGUMENT",
            }
        },
        status=400,
    )
    with pytest.raises(ModelError, match="rejected the request: \\* GenerateContentRequest"):
        model(wire).complete(ModelRequest(messages=QUESTION))


def test_bad_key_and_async_errors(wire: Any) -> None:
    wire.json(
        {
            "error": {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
            }
        },
        status=400,
    )
    wire.json(
        {"error": {"code": 404, "message": "models/nope is not found", "status": "NOT_FOUND"}},
        status=404,
    )
    gemini = model(wire, max_retries=0)
    with pytest.raises(ModelError, match="API key was rejected"):
        gemini.complete(ModelRequest(messages=QUESTION))
    with pytest.raises(ModelError, match="not found \\(models/nope is not found\\)"):
        asyncio.run(gemini.acomplete(ModelRequest(messages=QUESTION)))


def test_rate_limit_is_retried_by_the_sdk(wire: Any) -> None:
    limited = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing.",
            "status": "RESOURCE_EXHAUSTED",
        }
    }
    wire.json(limited, status=429)
    wire.json(response([{"text": "after the wait"}]))
    assert (
        model(wire, retry_delay_s=0.01).complete(ModelRequest(messages=QUESTION)).text
        == "after the wait"
    )
    assert len(wire.sent) == 2 and wire.bodies[0] == wire.bodies[1]
    wire.json(limited, status=429)
    with pytest.raises(ModelError, match="rate limited"):
        model(wire, max_retries=0).complete(ModelRequest(messages=QUESTION))


def test_unreachable_server_names_the_host() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    gemini = GeminiModel("g", base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0)
    with pytest.raises(ModelError, match=f"cannot reach http://127.0.0.1:{port}"):
        gemini.complete(ModelRequest(messages=QUESTION))


def test_native_async_run_end_to_end(wire: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from tao.agent import Agent

    monkeypatch.setenv("GEMINI_API_KEY", "k")  # the run config holds no secrets
    wire.json(response([call("17 * 23 + 4", "fc_1")]))
    finish = {"functionCall": {"id": "fc_2", "name": "finish", "args": {"answer": "395"}}}
    wire.json(response([finish]))
    agent = Agent("gemini:gemini-3.8-flash", ["calc"], base_url=wire.base_url, record=False)
    result = asyncio.run(agent.arun("What is 17 * 23 + 4?"))
    assert (result.status, result.answer) == (Status.FINISHED, "395")
    names = [d["name"] for d in wire.bodies[0]["tools"][0]["functionDeclarations"]]
    assert "calculator" in names and "finish" in names
    assert wire.bodies[1]["contents"][-1]["parts"] == [
        {"functionResponse": {"id": "fc_1", "name": "calculator", "response": {"output": "395"}}}
    ]


def test_missing_key_is_one_clear_line() -> None:
    with pytest.raises(ModelUnavailableError, match="set GEMINI_API_KEY"):
        load_model("gemini:gemini-3.8-flash")


def test_spec_and_key_from_the_environment(wire: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-env")
    loaded = load_model("gemini:gemini-3.8-flash", base_url=wire.base_url)
    assert isinstance(loaded, GeminiModel) and loaded.name == "gemini:gemini-3.8-flash"
    assert loaded.supports_tools and loaded.supports_stop and not loaded.supports_grammar
    wire.json(response([{"text": "hi"}]))
    assert loaded.complete(ModelRequest(messages=QUESTION)).text == "hi"
    assert wire.sent[0].headers["x-goog-api-key"] == "AIza-env"


def test_streamed_native_run_shows_text_as_it_arrives(
    wire: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tao.agent import Agent

    monkeypatch.setenv("GEMINI_API_KEY", "k")  # the run config holds no secrets
    from tao.events import FinalEvent, TextDelta

    wire.sse(streamed_reply())
    finish = {"functionCall": {"id": "fc_2", "name": "finish", "args": {"answer": "395"}}}
    wire.sse(sse(response([{"text": "Done."}], finish=None, usage=False), response([finish])))
    agent = Agent("gemini:gemini-3.8-flash", ["calc"], base_url=wire.base_url, record=False)
    events = list(agent.stream("What is 17 * 23 + 4?"))
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts == ["I will ", "compute it.", "Done."]
    assert isinstance(events[-1], FinalEvent)
    assert (events[-1].result.status, events[-1].result.answer) == (Status.FINISHED, "395")
    assert wire.bodies[1]["contents"][-2]["parts"][-1]["thoughtSignature"]  # signed call went back


def test_cached_content_and_thoughts_are_priced_as_the_table_says(wire: Any) -> None:
    """Issue 15: thinking tokens bill as output, cached content at the cache-read rate."""
    from genai_prices import Usage, calc_price

    body = response([{"text": "Thought: multiply first."}])
    body["usageMetadata"]["cachedContentTokenCount"] = 64
    wire.json(body)
    reply = model(wire).complete(ModelRequest(messages=QUESTION))
    assert (reply.input_tokens, reply.output_tokens, reply.cache_read_tokens) == (96, 52, 64)
    usage = Usage(input_tokens=96, output_tokens=52, cache_read_tokens=64)
    price = calc_price(usage, "gemini-3.8-flash", provider_id="google").total_price
    assert reply.cost_usd == float(price) > 0


def test_an_input_over_the_window_names_it_issue_27(wire: Any) -> None:
    """Gemini's refusal for size, through google-genai: the error names the limit, and a run
    learns its window from it (tao.models.window.overflow)."""
    from tao.models.window import Overflow, overflow

    wire.json(
        {
            "error": {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of "
                "tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        },
        status=400,
    )
    with pytest.raises(ModelError) as refused:
        model(wire).complete(ModelRequest(messages=QUESTION))
    assert overflow(str(refused.value)) == Overflow(1048576, 1200000)
