"""Tool calling for a model without native tools: described in the prompt, read from the text.

This is what Hermes/Qwen chat templates do, done in Python so that it works through
:meth:`tao.models.Model.complete` with any model that honours a grammar:

* the tools go into the system message, as the template writes them (``<tools>`` JSON);
* earlier calls become ``<tool_call>`` blocks, results ``<tool_response>`` user turns;
* the reply is held by :func:`tao.protocol.hermes.tool_call_grammar` to plain text,
  one ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (or the bare JSON)
  naming a tool of the request with arguments of its schema, or text and then such a
  call, and read back into OpenAI ``tool_calls`` and content (the text, else ``None``).

    messages = prompt_messages(request.messages, request.tools)
    grammar = tool_call_grammar({tool.name: tool.parameters for tool in request.tools})
    content, calls = read_tool_calls(reply.text, names, constrained=True)
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence

from tao.models.base import FunctionCall, Message, ToolCallMessage, ToolSpec
from tao.protocol.hermes import CLOSE, OPEN, call_start
from tao.state.jsontypes import JSON

__all__ = ["prompt_messages", "read_tool_calls"]

_TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
_ARGUMENTS_KEY = re.compile(r'"(?:arguments|parameters)"\s*:\s*')
_FENCED_JSON = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_DEFAULT_SYSTEM = "You are a helpful assistant."
_TOOLS_INTRO = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_OUTRO = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def _tojson(value: JSON) -> str:
    """JSON as Jinja's ``tojson`` writes it (sorted keys, HTML-safe), as templates show it."""
    text = json.dumps(value, sort_keys=True)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        text = text.replace(char, escaped)
    return text


def _tool_json(tool: ToolSpec) -> str:
    function: JSON = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }
    return _tojson({"type": "function", "function": function})


def _system(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Message:
    first = messages[0] if messages else None
    base = (first.get("content") or "") if first and first.get("role") == "system" else None
    described = "".join("\n" + _tool_json(tool) for tool in tools)
    text = (base if base is not None else _DEFAULT_SYSTEM) + _TOOLS_INTRO + described
    return Message(role="system", content=text + _TOOLS_OUTRO)


def _call_block(call: ToolCallMessage) -> str:
    try:
        arguments: JSON = json.loads(call["function"]["arguments"])
    except ValueError:
        arguments = call["function"]["arguments"]
    name = json.dumps(call["function"]["name"])
    return f'<tool_call>\n{{"name": {name}, "arguments": {_tojson(arguments)}}}\n</tool_call>'


def prompt_messages(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[Message]:
    """The transcript with the tools described and every call and result written as text."""
    out = [_system(messages, tools)]
    for message in messages:
        role = message.get("role")
        content = message.get("content") or ""
        if role == "system" and message is messages[0]:
            continue  # merged into the tools' system message
        if role == "assistant" and message.get("tool_calls"):
            blocks = [_call_block(call) for call in message.get("tool_calls", [])]
            out.append(Message(role="assistant", content="\n".join([content, *blocks]).strip()))
        elif role == "tool":
            response = f"<tool_response>\n{content}\n</tool_response>"
            previous = out[-1]
            if previous.get("role") == "user" and "<tool_response>" in (
                previous.get("content") or ""
            ):
                previous["content"] = f"{previous.get('content')}\n{response}"
            else:
                out.append(Message(role="user", content=response))
        else:
            out.append(Message(role=str(role), content=content))
    return out


def _raw_arguments(block: str, arguments: JSON) -> str:
    """The arguments as the model wrote them (what a stream sent, piece by piece), or as
    JSON text when they cannot be found in ``block`` unchanged."""
    for match in _ARGUMENTS_KEY.finditer(block):
        try:
            value, end = json.JSONDecoder().raw_decode(block, match.end())
        except ValueError:
            continue
        if value == arguments:
            return block[match.end() : end]
    return json.dumps(arguments, ensure_ascii=False)


def _read_call(block: str, tool_names: set[str]) -> ToolCallMessage | None:
    try:
        call: JSON = json.loads(block)
    except ValueError:
        return None
    if not isinstance(call, dict) or call.get("name") not in tool_names:
        return None
    arguments = call.get("arguments", call.get("parameters", {}))
    return ToolCallMessage(
        id=f"call_{uuid.uuid4().hex[:24]}",
        type="function",
        function=FunctionCall(
            name=str(call["name"]),
            arguments=arguments if isinstance(arguments, str) else _raw_arguments(block, arguments),
        ),
    )


def _constrained(text: str, tool_names: set[str]) -> tuple[str | None, list[ToolCallMessage]]:
    """A reply held by :func:`tao.protocol.hermes.tool_call_grammar`: a call, text and
    then a call (tagged or bare), or text alone."""
    stripped = text.strip()
    at = call_start(stripped)
    if at < 0 or not stripped.endswith(("}", CLOSE)):
        return text, []  # text alone, or a call cut short by max_tokens
    block = stripped[at:]
    if block.startswith(OPEN):
        block = block[len(OPEN) : -len(CLOSE)].strip()
    call = _read_call(block, tool_names)
    if call is None:
        return text, []
    return stripped[:at].strip() or None, [call]


def _blocks(text: str) -> list[str]:
    blocks = [match.group(1) for match in _TOOL_CALL.finditer(text)]
    if blocks:
        return blocks
    return [match.group(1) for match in _FENCED_JSON.finditer(text)] or [text.strip()]


def read_tool_calls(
    text: str, tool_names: set[str], *, constrained: bool = False
) -> tuple[str | None, list[ToolCallMessage]]:
    """The reply's prose and the calls it wrote: ``(content, tool_calls)``.

    ``constrained``: the reply was held by :func:`tao.protocol.hermes.tool_call_grammar`,
    so it is one call (no content), text and then one call, tagged or bare (the text is
    the content), or text alone, and is read exactly so; a call cut short by ``max_tokens``
    comes back as text. Otherwise the reply is read
    leniently: the prompt asks for ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``,
    and small models sometimes write the same object in a fenced JSON block or bare, which
    is accepted too when ``name`` is one of this request's tools; the content is then the
    text before the first call. Without calls the text comes back whole.

    A call's ``arguments`` are the JSON text as the model wrote it.
    """
    if constrained:
        return _constrained(text, tool_names)
    calls = [call for block in _blocks(text) if (call := _read_call(block, tool_names))]
    if not calls:
        return text, []
    cut = min((i for i in (text.find(OPEN), text.find("```")) if i >= 0), default=0)
    return text[:cut].strip() or None, calls
