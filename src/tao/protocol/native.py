"""Native tool calling (SPEC L7): the model returns structured calls, nothing to parse.

The loop is the same as for the text protocol; only reading a reply and
writing the transcript differ. A reply can hold several calls (parallel tool
calling); ``finish`` is a tool like any other, with an ``answer`` argument.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from tao.models.base import Message, ModelReply, ToolCall, ToolSpec
from tao.protocol import prompts
from tao.protocol.labels import Labels
from tao.protocol.scan import Exhausted, Scanner
from tao.protocol.text import FINISH, Action, FinalAnswer, ParseFailure, cut_at_stop, parse_reply
from tao.state.jsontypes import JSONObject
from tao.tools.base import Tool


@dataclass(frozen=True)
class NativeCalls:
    """The tool calls of one reply, in the model's order, and its text (the thought)."""

    thought: str | None
    calls: tuple[ToolCall, ...]


def tool_specs(tools: Sequence[Tool], *, answer_schema: JSONObject | None = None) -> list[ToolSpec]:
    """What native backends send as ``tools``: name, description, JSON schema.

    With ``answer_schema`` (typed final answers, SPEC L13), ``finish`` takes an
    ``answer`` of that schema, so the provider's own structured output shapes it.
    """
    specs = [ToolSpec(t.name, prompts.description(t), t.schema) for t in tools]
    if answer_schema is None:
        return specs
    typed: JSONObject = {
        "type": "object",
        "properties": {"answer": answer_schema},
        "required": ["answer"],
    }
    return [ToolSpec(s.name, s.description, typed) if s.name == FINISH else s for s in specs]


def read_reply(reply: ModelReply, labels: Labels) -> NativeCalls | FinalAnswer | ParseFailure:
    """Structured calls win; a ``finish`` call is the answer; plain text is read as text."""
    thought = reply.text.strip() or None
    for call in reply.tool_calls:
        if call.name.lower() == FINISH:
            answer = call.arguments.get("answer")
            if isinstance(answer, dict | list):  # a typed answer: kept as JSON text
                return FinalAnswer(thought, json.dumps(answer, ensure_ascii=False), reply.text)
            if isinstance(answer, str | int | float) and str(answer).strip():
                return FinalAnswer(thought, str(answer).strip(), reply.text)
            return ParseFailure(thought, 'finish needs an "answer" argument', reply.text)
    if reply.tool_calls:
        return NativeCalls(thought, reply.tool_calls)
    parsed = parse_reply(reply.text, labels)  # some models write a final answer as text
    if isinstance(parsed, Action):
        return ParseFailure(thought, "call a tool through tool calling, not as text", reply.text)
    if isinstance(parsed, ParseFailure):
        return ParseFailure(thought, "the reply called no tool; call a tool or finish", reply.text)
    return parsed


def cut_made_up(text: str, labels: Labels, *, has_calls: bool) -> str:
    """The reply's text without what the model made up after calling (SPEC L2, L3).

    Backends that ignore stop sequences let a model write its own ``Observation:``
    (any spelling the text protocol accepts: numbered, emphasised, full-width colon);
    everything from there is cut, as the text protocol cuts it. When the reply also
    calls tools, a ``Final Answer:`` line is an answer given before seeing the results,
    and is cut too; without calls it *is* the answer and stays.
    """
    kept = cut_at_stop(text, labels.stop)
    scan = Scanner(kept, labels)
    words = (labels.observation, *labels.answer_words) if has_calls else (labels.observation,)
    try:
        found = scan.line_label(words, 0)
    except Exhausted:  # thousands of malformed labels: the stop cut is all we can do
        found = None
    if found is not None:
        return kept[: found.start].rstrip()
    return kept.rstrip() if len(kept) < len(text) else kept


def assistant_message(reply: ModelReply) -> Message:
    """The model's turn as it goes back into the transcript, calls included."""
    message: Message = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.raw_arguments
                    or json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in reply.tool_calls
        ]
    return message


def tool_message(call: ToolCall, observation: str) -> Message:
    return {"role": "tool", "tool_call_id": call.id, "content": observation}
