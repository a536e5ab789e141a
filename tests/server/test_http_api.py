"""``tao serve``'s HTTP API without the embedded model: a real server on 127.0.0.1, the real
``openai`` SDK as client, and a scripted model that records each :class:`ModelRequest`.

These pin down what the server itself does (the wire format, streaming, prompted tool
calls, errors as JSON) on any machine; tests/server/test_openai_api.py checks the same
against the embedded model where it is installed.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tao.errors import ModelError
from tao.models.base import ModelReply, ModelRequest, OnText, ToolCall
from tao.server import Running, make_app
from tao.state.jsontypes import JSONObject

COUNT = [{"role": "user", "content": "Count from 1 to 5."}]


@dataclass
class ScriptedModel:
    """Answers with the next scripted reply, in word-sized pieces to ``on_text``."""

    replies: list[str]
    supports_tools: bool = False
    tool_calls: tuple[ToolCall, ...] = ()
    name: str = "scripted"
    supports_stop: bool = True
    supports_grammar: bool = True
    requests: list[ModelRequest] = field(default_factory=list)

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        self.requests.append(request)
        if request.grammar == "x ::=":
            raise ModelError("invalid GBNF grammar: x ::=")
        text = self.replies.pop(0)
        if on_text is not None:
            for piece in text.split(" "):
                on_text(piece + " ")
        return ModelReply(
            text=text,
            input_tokens=11,
            output_tokens=len(text.split()),
            finish_reason="stop",
            tool_calls=self.tool_calls,
        )

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        return self.complete(request, on_text)


@dataclass
class Served:
    model: ScriptedModel
    base_url: str
    port: int

    def client(self) -> Any:
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key="none", max_retries=0, timeout=30)

    def raw(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            return reply.status, json.loads(reply.read())
        finally:
            conn.close()


@pytest.fixture
def served() -> Iterator[Served]:
    model = ScriptedModel(["1 2 3 4 5"])
    with Running(make_app(model)) as running:
        yield Served(model, f"{running.url}/v1", running.port)


def test_models_health_and_unknown_routes_answer_json(served: Served) -> None:
    assert [model.id for model in served.client().models.list()] == ["scripted"]
    assert served.raw("GET", "/v1/models/scripted")[1]["owned_by"] == "tao"
    status, body = served.raw("GET", "/v1/models/other")
    assert (status, body["error"]["code"]) == (404, "model_not_found")
    assert served.raw("GET", "/health") == (200, {"status": "ok", "model": "scripted"})
    status, body = served.raw("POST", "/v1/nothing", b"{}")
    assert status == 404 and "no route" in body["error"]["message"]


def test_request_fields_reach_the_model_request_and_usage_comes_back(served: Served) -> None:
    reply = served.client().chat.completions.create(
        model="asked-for",
        messages=[{"role": "developer", "content": "Be brief."}, *COUNT],
        stop=["6"],
        max_tokens=7,
        temperature=0,
        seed=3,
        extra_body={"grammar": 'root ::= "1 2 3 4 5"'},
    )
    (request,) = served.model.requests
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert (request.stop, request.max_tokens, request.temperature) == (("6",), 7, 0.0)
    assert request.grammar == 'root ::= "1 2 3 4 5"'
    assert reply.model == "asked-for"
    assert reply.choices[0].message.content == "1 2 3 4 5"
    assert reply.choices[0].finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (11, 5)
    assert reply.usage.total_tokens == 16


def test_streaming_sends_text_as_it_comes_then_the_finish_reason(served: Served) -> None:
    chunks = list(
        served.client().chat.completions.create(model="scripted", messages=COUNT, stream=True)
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert text.strip() == "1 2 3 4 5"
    assert len(chunks) == 6  # five pieces and the finish
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert len({chunk.id for chunk in chunks}) == 1


def test_tools_for_a_model_without_native_tools_are_prompted_and_read_back(
    served: Served, calculator_tool: JSONObject
) -> None:
    """Without a grammar to hold it (SPEC L7), the reply is read leniently: the prose
    before the tagged call is the content (tests/server/test_tool_replies.py: with one)."""
    served.model.supports_grammar = False
    served.model.replies = [
        'I will compute it.\n<tool_call>\n{"name": "calculator", "arguments": '
        '{"expression": "17*23+4"}}\n</tool_call>'
    ]
    transcript = [
        {"role": "system", "content": "You solve sums."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "calculator", "arguments": '{"expression": "2+2"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
        {"role": "user", "content": "And 17 * 23 + 4?"},
    ]  # fmt: skip
    reply = served.client().chat.completions.create(
        model="scripted", messages=transcript, tools=[calculator_tool]
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "I will compute it."
    (call,) = choice.message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "calculator",
        {"expression": "17*23+4"},
    )
    (request,) = served.model.requests
    assert request.tools is None and request.grammar is None
    system, *rest = request.messages
    described = system.get("content") or ""
    assert described.startswith("You solve sums.\n\n# Tools")
    assert '"name": "calculator"' in described
    assert [m["role"] for m in rest] == ["user", "assistant", "user", "user"]
    assert rest[1]["content"] == (
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "2+2"}}\n</tool_call>'
    )
    assert rest[2]["content"] == "<tool_response>\n4\n</tool_response>"


def test_native_tool_calls_pass_through(served: Served, calculator_tool: JSONObject) -> None:
    served.model.supports_tools = True
    served.model.replies = [""]
    served.model.tool_calls = (
        ToolCall(id="call_1", name="calculator", arguments={"expression": "1+1"}),
    )
    reply = served.client().chat.completions.create(
        model="scripted", messages=COUNT, tools=[calculator_tool], tool_choice="auto"
    )
    (request,) = served.model.requests
    assert request.tools is not None and [tool.name for tool in request.tools] == ["calculator"]
    (call,) = reply.choices[0].message.tool_calls
    assert (call.id, call.function.arguments) == ("call_1", '{"expression": "1+1"}')
    assert reply.choices[0].finish_reason == "tool_calls"


def test_bad_requests_get_openai_errors_and_never_reach_the_model(
    served: Served, calculator_tool: JSONObject
) -> None:
    import openai

    client = served.client()
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="scripted", messages=[])
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(model="scripted", messages=COUNT, temperature=5)
    assert served.model.requests == []
    with pytest.raises(openai.BadRequestError, match="grammar") as caught:
        client.chat.completions.create(
            model="scripted", messages=COUNT, extra_body={"grammar": "x ::="}
        )
    assert caught.value.body["param"] == "grammar"  # type: ignore[index]


def test_malformed_and_oversized_bodies_are_json_errors(served: Served) -> None:
    status, body = served.raw("POST", "/v1/chat/completions", b"{not json")
    assert status == 400 and "not valid JSON" in body["error"]["message"]
    status, body = served.raw("POST", "/v1/chat/completions", b"[]")
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as conn:
        conn.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 9000000\r\n\r\n"
        )  # the body is refused before it is read
        head = conn.recv(200)
    assert head.startswith(b"HTTP/1.1 413")


def test_tao_serve_refuses_a_model_it_cannot_serve() -> None:
    """Only local models are served; a wrong spec is a usage error, not a traceback."""
    out = subprocess.run(
        [sys.executable, "-m", "tao", "serve", "--model", "openai:gpt-4o", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "only local models can be served" in out.stderr
    assert "Traceback" not in out.stderr
