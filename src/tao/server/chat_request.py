"""Reading a ``POST /v1/chat/completions`` body into a checked :class:`ChatRequest`.

Every field is checked here, once, and a bad one is an :class:`~tao.server.wire.ApiError`
naming it (``param``), as OpenAI answers; nothing past this module sees raw JSON.

    request = read_chat_request(json.loads(body))
    request.messages, request.stop, request.tools
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tao.models.base import FunctionCall, Message, ToolCallMessage, ToolSpec
from tao.server.wire import ApiError
from tao.state.jsontypes import JSON, JSONObject

__all__ = ["ChatRequest", "read_chat_request"]

_ROLES = ("system", "user", "assistant", "tool")
#: More than any context window a local model has; a bigger number is a mistake.
_MAX_TOKENS = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """A checked chat-completion request, in the terms of :class:`tao.models.ModelRequest`."""

    #: The transcript, roles normalised (``developer`` is ``system``), text content only.
    messages: tuple[Message, ...]
    stop: tuple[str, ...] = ()
    #: OpenAI's default is 1.0.
    temperature: float = 1.0
    #: ``None``: the model's own default.
    max_tokens: int | None = None
    #: GBNF text: the ``grammar`` extension field, or made from ``response_format``.
    grammar: str | None = None
    #: The tools the model may call; empty when none (or ``tool_choice`` is ``none``).
    tools: tuple[ToolSpec, ...] = ()
    #: The reply must call a tool (``tool_choice`` ``required`` or a named function).
    tool_required: bool = False
    stream: bool = False
    #: ``stream_options.include_usage``: end the stream with a chunk of usage.
    include_usage: bool = False
    #: The model name the client asked for, echoed in the answer.
    model: str | None = None


def _bad(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, param=param)


def _object(value: JSON, message: str, param: str) -> JSONObject:
    if not isinstance(value, dict):
        raise _bad(message, param)
    return value


def _text_content(content: JSON, where: str) -> str:
    """OpenAI content is a string or a list of parts; keep the text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(f"{where}: content must be a string or a list of text parts", "messages")
    texts = []
    for part in content:
        text = part.get("text") if isinstance(part, dict) and part.get("type") == "text" else None
        if not isinstance(text, str):
            raise _bad(f"{where}: only text content parts are supported", "messages")
        texts.append(text)
    return "".join(texts)


def _tool_call(raw: JSON, where: str) -> ToolCallMessage:
    call = _object(raw, f"{where}: each tool call must be an object", "messages")
    function = _object(call.get("function"), f"{where}: a tool call needs a function", "messages")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return ToolCallMessage(
        id=str(call.get("id") or ""),
        type="function",
        function=FunctionCall(name=str(function.get("name") or ""), arguments=arguments),
    )


def _message(raw: JSON, index: int) -> Message:
    where = f"messages[{index}]"
    data = _object(raw, f"{where} must be an object", "messages")
    role = data.get("role")
    if role == "developer":
        role = "system"
    if not isinstance(role, str) or role not in _ROLES:
        raise _bad(f"{where}: unknown role {role!r}", "messages")
    message = Message(role=role, content=_text_content(data.get("content"), where))
    calls = data.get("tool_calls")
    if role == "assistant" and calls:
        if not isinstance(calls, list):
            raise _bad(f"{where}: 'tool_calls' must be a list", "messages")
        message["tool_calls"] = [_tool_call(call, where) for call in calls]
    call_id = data.get("tool_call_id")
    if role == "tool" and isinstance(call_id, str) and call_id:
        message["tool_call_id"] = call_id
    return message


def _messages(raw: JSON) -> tuple[Message, ...]:
    if not isinstance(raw, list) or not raw:
        raise _bad("'messages' must be a non-empty list", "messages")
    return tuple(_message(item, index) for index, item in enumerate(raw))


def _number(body: JSONObject, key: str, default: float, low: float, high: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise _bad(f"'{key}' must be a number between {low} and {high}", key)
    return float(value)


def _stop(value: JSON) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(str(item) for item in value)
    raise _bad("'stop' must be a string or a list of strings", "stop")


def _max_tokens(body: JSONObject) -> int | None:
    value = body.get("max_completion_tokens", body.get("max_tokens"))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_TOKENS:
        raise _bad(f"'max_tokens' must be an integer from 1 to {_MAX_TOKENS}", "max_tokens")
    return value


def _check_sampling(body: JSONObject) -> None:
    """Fields the SDK may send that do not change the reply here, checked all the same.

    The embedded model samples by ``temperature`` alone, with its own seed sequence so
    that a run replays; ``top_p``, the penalties and ``seed`` are accepted when valid.
    """
    if body.get("n", 1) != 1:
        raise _bad("only n=1 is supported", "n")
    _number(body, "top_p", 1.0, 0.0, 1.0)
    _number(body, "presence_penalty", 0.0, -2.0, 2.0)
    _number(body, "frequency_penalty", 0.0, -2.0, 2.0)
    seed = body.get("seed")
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, int) or abs(seed) >= 2**64
    ):
        raise _bad("'seed' must be a 64-bit integer", "seed")


def _json_grammar(schema: JSONObject | None) -> str:
    """GBNF for any JSON object, or for one JSON schema (llama.cpp's own converters)."""
    from llama_cpp import llama_grammar

    if schema is None:
        return str(llama_grammar.JSON_GBNF)
    try:
        return str(llama_grammar.json_schema_to_gbnf(json.dumps(schema)))
    except (ValueError, KeyError, TypeError, RuntimeError, RecursionError) as error:
        raise _bad(f"unusable JSON schema: {error}", "response_format") from error


def _response_format_grammar(value: JSON) -> str | None:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return _json_grammar(None)
    if kind == "json_schema" and isinstance(value, dict):
        spec = value.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise _bad("response_format.json_schema.schema is required", "response_format")
        return _json_grammar(schema)
    raise _bad(f"unsupported response_format type {kind!r}", "response_format")


def _grammar(body: JSONObject) -> str | None:
    grammar = body.get("grammar")
    if grammar is not None and not isinstance(grammar, str):
        raise _bad("'grammar' must be GBNF text", "grammar")
    from_format = _response_format_grammar(body.get("response_format"))
    if grammar is not None and from_format is not None:
        raise _bad("'grammar' cannot be combined with a JSON response_format", "grammar")
    return grammar if grammar is not None else from_format


def _tool_spec(raw: JSON) -> ToolSpec:
    tool = _object(raw, "'tools' must be a list of tool objects", "tools")
    function = _object(tool.get("function"), "each tool needs a 'function' object", "tools")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise _bad("each tool function needs a name", "tools")
    parameters = function.get("parameters")
    return ToolSpec(
        name=name,
        description=str(function.get("description") or ""),
        parameters=parameters if isinstance(parameters, dict) else {"type": "object"},
    )


def _chosen(tools: tuple[ToolSpec, ...], choice: JSON) -> tuple[ToolSpec, ...]:
    """The tools ``tool_choice`` leaves: none, all of them, or the one it names."""
    if choice == "none" or not tools:
        return ()
    if choice is None or choice in ("auto", "required"):
        return tools
    function = choice.get("function") if isinstance(choice, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    named = tuple(tool for tool in tools if tool.name == name)
    if not named:
        raise _bad(f"unsupported tool_choice {choice!r}", "tool_choice")
    return named


def _tools(body: JSONObject) -> tuple[tuple[ToolSpec, ...], bool]:
    """The tools left to the model, and whether it must call one."""
    raw = body.get("tools")
    if raw is None:
        return (), False
    if not isinstance(raw, list):
        raise _bad("'tools' must be a list of tool objects", "tools")
    choice = body.get("tool_choice")
    tools = _chosen(tuple(_tool_spec(item) for item in raw), choice)
    return tools, bool(tools) and choice not in (None, "auto")


def _include_usage(body: JSONObject, stream: bool) -> bool:
    """``stream_options``, which OpenAI takes only with ``stream`` (else a 400)."""
    options = body.get("stream_options")
    if options is None:
        return False
    if not stream:
        raise _bad("'stream_options' is only allowed when 'stream' is true", "stream_options")
    if not isinstance(options, dict):
        raise _bad("'stream_options' must be an object", "stream_options")
    include = options.get("include_usage", False)
    if not isinstance(include, bool | None):
        raise _bad("'stream_options.include_usage' must be true or false", "stream_options")
    return bool(include)


def read_chat_request(body: JSON) -> ChatRequest:
    """Check a decoded request body; raises :class:`ApiError` (400) naming the bad field."""
    if not isinstance(body, dict):
        raise _bad("the request body must be a JSON object")
    messages = _messages(body.get("messages"))
    _check_sampling(body)
    tools, tool_required = _tools(body)
    grammar = _grammar(body)
    raw_stream = body.get("stream", False)
    if not isinstance(raw_stream, bool | None):
        raise _bad("'stream' must be true or false", "stream")
    stream = bool(raw_stream)
    if tools and grammar is not None:
        raise _bad("'grammar' cannot be combined with tools", "grammar")
    requested = body.get("model")
    return ChatRequest(
        messages=messages,
        stop=_stop(body.get("stop")),
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        max_tokens=_max_tokens(body),
        grammar=grammar,
        tools=tools,
        tool_required=tool_required,
        stream=stream,
        include_usage=_include_usage(body, stream),
        model=requested if isinstance(requested, str) and requested else None,
    )
