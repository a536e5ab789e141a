"""Tool-call replies of ``tao serve`` in the OpenAI shape, streamed or not (SPEC L7, M5;
issue 30 item 7): a real server on 127.0.0.1, the official ``openai`` SDK (and raw
server-sent events where the exact bytes matter), and a stand-in model that writes what
the tool-call grammar lets the embedded model write, in pieces of any size.
tests/server/test_openai_api.py checks the same against the embedded model itself."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from tao.models.base import ModelReply, ModelRequest, OnText
from tao.protocol.hermes import tool_call_grammar
from tao.server import Running, make_app
from tao.state.jsontypes import JSONObject

ASK = [{"role": "user", "content": "What is 17 * 23 + 4?"}]
CALL = '{"name": "calculator", "arguments": {"expression": "17 * 23 + 4"}}'
ARGUMENTS = '{"expression": "17 * 23 + 4"}'


@dataclass
class StandIn:
    """Writes the next reply to ``on_text`` in pieces of ``piece`` characters."""

    replies: list[str]
    piece: int = 3
    supports_grammar: bool = True
    name: str = "stand-in"
    supports_stop: bool = True
    supports_tools: bool = False
    requests: list[ModelRequest] = field(default_factory=list)

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        self.requests.append(request)
        text = self.replies.pop(0)
        if on_text is not None:
            for at in range(0, len(text), self.piece):
                on_text(text[at : at + self.piece])
        return ModelReply(
            text=text,
            input_tokens=120,
            output_tokens=9,
            evaluated_tokens=20,
            finish_reason="stop",
        )

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        return self.complete(request, on_text)


@dataclass
class Served:
    model: StandIn
    port: int

    def client(self) -> Any:
        import openai

        url = f"http://127.0.0.1:{self.port}/v1"
        return openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=30)

    def events(self, body: JSONObject) -> list[Any]:
        """The raw server-sent events of a streamed request, decoded; ``[DONE]`` as a str."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            headers = {"Content-Type": "application/json"}
            conn.request("POST", "/v1/chat/completions", json.dumps(body), headers)
            text = conn.getresponse().read().decode()
        finally:
            conn.close()
        data = [line[len("data: ") :] for line in text.split("\n\n") if line.startswith("data: ")]
        return [item if item == "[DONE]" else json.loads(item) for item in data]


def serve(model: StandIn) -> Running:
    return Running(make_app(model))


PROSE = 'Sets { "a": 1 }, <t<o {{ and {"n": 2}. <tool\n{ "nam'
#: What the grammar lets the model write, and what a client must get for it.
SHAPES = [
    (CALL, None, ARGUMENTS),
    (f"<tool_call>\n{CALL}\n</tool_call>", None, ARGUMENTS),
    (f"Let me compute it.\n<tool_call>\n{CALL}\n</tool_call>", "Let me compute it.", ARGUMENTS),
    ('{"name": "calculator", "arguments": {"expression": "say \\"hi\\" {x}"}}', None,
     '{"expression": "say \\"hi\\" {x}"}'),
    ("The answer is 395.", "The answer is 395.", None),
    # text then the bare call: what the embedded model writes through `tao run --protocol native`
    (f"I will use the calculator.\nIt adds {{x}} and <b>.\n{CALL}",
     "I will use the calculator.\nIt adds {x} and <b>.", ARGUMENTS),
    # prose with braces and tags, cut short (max_tokens) where a call could have begun
    (PROSE, PROSE, None),
]  # fmt: skip


def ask(client: Any, tool: JSONObject, **options: Any) -> Any:
    return client.chat.completions.create(
        model="stand-in", messages=ASK, tools=[tool], temperature=0, **options
    )


@pytest.mark.parametrize(("written", "content", "arguments"), SHAPES)
def test_a_tool_reply_has_the_call_in_tool_calls_and_only_prose_in_content_L7(
    calculator_tool: JSONObject, written: str, content: str | None, arguments: str | None
) -> None:
    model = StandIn([written])
    with serve(model) as running:
        reply = ask(Served(model, running.port).client(), calculator_tool)
    choice = reply.choices[0]
    assert choice.message.content == content
    if arguments is None:
        assert choice.message.tool_calls is None and choice.finish_reason == "stop"
        return
    (call,) = choice.message.tool_calls
    assert (call.type, call.function.name, call.function.arguments) == (
        "function",
        "calculator",
        arguments,
    )
    json.loads(call.function.arguments)  # valid JSON, as the model wrote it
    assert call.id.startswith("call_") and choice.finish_reason == "tool_calls"
    (request,) = model.requests
    assert request.grammar == tool_call_grammar(
        {"calculator": calculator_tool["function"]["parameters"]}
    )  # type: ignore[index]


@pytest.mark.parametrize("piece", [1, 4, 64])
@pytest.mark.parametrize(("written", "content", "arguments"), SHAPES)
def test_a_streamed_tool_reply_adds_up_to_the_same_answer_L7(
    calculator_tool: JSONObject,
    piece: int,
    written: str,
    content: str | None,
    arguments: str | None,
) -> None:
    """The SDK's stream helper accumulates the deltas into the answer a plain request
    gets; the call is announced once (id, type, name) and its arguments come in pieces."""
    model = StandIn([written, written], piece=piece)
    with serve(model) as running:
        served = Served(model, running.port)
        with served.client().chat.completions.stream(
            model="stand-in", messages=ASK, tools=[calculator_tool], temperature=0
        ) as stream:
            final = stream.get_final_completion()
        body = {"messages": ASK, "tools": [calculator_tool], "stream": True}
        events = served.events(body)
    message = final.choices[0].message
    assert message.content == content
    assert final.choices[0].finish_reason == ("stop" if arguments is None else "tool_calls")
    chunks, done = events[:-1], events[-1]
    assert done == "[DONE]"
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
    assert deltas[0]["role"] == "assistant"
    streamed = "".join(delta.get("content") or "" for delta in deltas)
    assert streamed == (content or "")
    pieces = [call for delta in deltas for call in delta.get("tool_calls", [])]
    if arguments is None:
        assert message.tool_calls is None and pieces == []
        return
    (call,) = message.tool_calls
    assert (call.function.name, call.function.arguments) == ("calculator", arguments)
    first, *rest = pieces
    assert first["index"] == 0 and first["type"] == "function" and first["id"].startswith("call_")
    assert first["function"] == {"name": "calculator", "arguments": ""} or len(pieces) == 1
    assert all(set(p) == {"index", "function"} and set(p["function"]) == {"arguments"}
               for p in rest)  # fmt: skip
    assert first["function"]["arguments"] + "".join(p["function"]["arguments"] for p in rest) == (
        arguments
    )
    if piece == 1:
        assert len(rest) > 1  # the arguments stream as the model writes them
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


LENIENT = [
    f"I will compute it.\n<tool_call>\n{CALL}\n</tool_call>",
    f"I will compute it.\n```json\n{CALL}\n```",
    CALL,
]


@pytest.mark.parametrize("written", LENIENT)
def test_a_model_without_a_grammar_is_read_leniently_and_streams_the_same_L7(
    calculator_tool: JSONObject, written: str
) -> None:
    """A model that does not take a grammar may wrap its call in prose or a fence; the
    stream holds back the tag or fence, so it never shows in the content."""
    model = StandIn([written, written], piece=2, supports_grammar=False)
    with serve(model) as running:
        served = Served(model, running.port)
        plain = ask(served.client(), calculator_tool).choices[0].message
        events = served.events({"messages": ASK, "tools": [calculator_tool], "stream": True})
    expected = None if written == CALL else "I will compute it."
    assert plain.content == expected
    assert json.loads(plain.tool_calls[0].function.arguments) == json.loads(ARGUMENTS)
    deltas = [event["choices"][0]["delta"] for event in events[:-1]]
    streamed = "".join(delta.get("content") or "" for delta in deltas)
    assert streamed == (expected or "")
    pieces = [call for delta in deltas for call in delta.get("tool_calls", [])]
    assert {piece["index"] for piece in pieces} == {0} and pieces[0]["function"]["name"]
    streamed_arguments = "".join(piece["function"]["arguments"] for piece in pieces)
    assert json.loads(streamed_arguments) == json.loads(ARGUMENTS)
    assert model.requests[0].grammar is None


def test_usage_chunk_only_when_asked_as_openai_sends_it(calculator_tool: JSONObject) -> None:
    """``stream_options.include_usage``: every chunk has ``usage: null`` and one last
    chunk before ``[DONE]`` has no choices and the usage; without it, no usage at all.
    ``cached_tokens`` are the prompt tokens the KV cache spared."""
    model = StandIn(["1 2 3", "1 2 3", "1 2 3"])
    with serve(model) as running:
        served = Served(model, running.port)
        asked = served.events(
            {"messages": ASK, "stream": True, "stream_options": {"include_usage": True}}
        )
        plain = served.events({"messages": ASK, "stream": True})
        sdk = list(
            served.client().chat.completions.create(
                model="m", messages=ASK, stream=True, stream_options={"include_usage": True}
            )
        )
    *chunks, last, done = asked
    assert done == "[DONE]"
    assert last["choices"] == [] and last["object"] == "chat.completion.chunk"
    assert last["usage"] == {
        "prompt_tokens": 120,
        "completion_tokens": 9,
        "total_tokens": 129,
        "prompt_tokens_details": {"cached_tokens": 100},
    }
    assert all(chunk["usage"] is None and chunk["choices"] for chunk in chunks)
    assert all("usage" not in chunk and chunk["choices"] for chunk in plain[:-1])
    assert sdk[-1].usage.total_tokens == 129 and sdk[-1].choices == []
    assert sdk[-1].usage.prompt_tokens_details.cached_tokens == 100


def test_stream_options_without_stream_is_refused(calculator_tool: JSONObject) -> None:
    import openai

    model = StandIn([])
    with serve(model) as running:
        client = Served(model, running.port).client()
        with pytest.raises(openai.BadRequestError, match="stream_options") as caught:
            client.chat.completions.create(
                model="m", messages=ASK, stream_options={"include_usage": True}
            )
    assert caught.value.body["param"] == "stream_options"  # type: ignore[index]
    assert model.requests == []


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "calculator"}}]
)
def test_a_required_call_is_asked_with_no_room_for_text_L7(
    calculator_tool: JSONObject, choice: Any
) -> None:
    model = StandIn([CALL])
    with serve(model) as running:
        reply = ask(Served(model, running.port).client(), calculator_tool, tool_choice=choice)
    assert reply.choices[0].message.tool_calls[0].function.arguments == ARGUMENTS
    schemas = {"calculator": calculator_tool["function"]["parameters"]}  # type: ignore[index]
    assert model.requests[0].grammar == tool_call_grammar(schemas, required=True)
