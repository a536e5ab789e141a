"""An OpenAI-compatible HTTP server for the embedded model (``tao serve``).

Endpoints, in the OpenAI wire format so the official ``openai`` SDK works:

* ``GET /v1/models`` and ``GET /v1/models/{id}``
* ``POST /v1/chat/completions``: ``messages``, ``stop``, ``temperature``,
  ``top_p``, ``max_tokens`` / ``max_completion_tokens``, ``seed``, ``stream``,
  ``response_format`` (``json_object``), ``tools`` / ``tool_choice``, and a
  ``grammar`` extension field (GBNF text, e.g. from
  :func:`tao.protocol.grammar.react_grammar`). Responses carry ``usage``.
* ``GET /health``

The standard library's threaded HTTP server accepts requests concurrently;
model calls are serialised by the loaded model's lock (one llama.cpp context).
It binds 127.0.0.1 unless told otherwise.

    python -m tao.serve --model local --port 8000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tao.errors import ModelError, TaoError
from tao.models.local import LocalModel

__all__ = ["ApiError", "ChatServer", "make_server", "serve_forever"]

#: Request bodies larger than this are refused (a chat request is a few hundred KB at most).
MAX_BODY_BYTES = 8 * 1024 * 1024

_TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
_FENCED_JSON = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


class ApiError(Exception):
    """An error answered in OpenAI's ``{"error": {...}}`` shape."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        }


def _text_content(content: Any, where: str) -> str:
    """OpenAI content is a string or a list of parts; keep the text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if (
                isinstance(part, dict)
                and part.get("type") == "text"
                and isinstance(part.get("text"), str)
            ):
                texts.append(part["text"])
            else:
                raise ApiError(
                    400, f"{where}: only text content parts are supported", param="messages"
                )
        return "".join(texts)
    raise ApiError(
        400, f"{where}: content must be a string or a list of text parts", param="messages"
    )


def _normalise_messages(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not raw:
        raise ApiError(400, "'messages' must be a non-empty list", param="messages")
    messages: list[dict[str, Any]] = []
    for index, message in enumerate(raw):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise ApiError(400, f"{where} must be an object", param="messages")
        role = message.get("role")
        if role == "developer":
            role = "system"
        if role not in ("system", "user", "assistant", "tool"):
            raise ApiError(400, f"{where}: unknown role {role!r}", param="messages")
        out: dict[str, Any] = {
            "role": role,
            "content": _text_content(message.get("content"), where),
        }
        if role == "assistant" and message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = dict(call.get("function") or {})
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    # The chat template serialises arguments itself.
                    with contextlib.suppress(ValueError):
                        function["arguments"] = json.loads(arguments)
                calls.append({**call, "function": function})
            out["tool_calls"] = calls
        if role == "tool" and message.get("tool_call_id"):
            out["tool_call_id"] = message["tool_call_id"]
        messages.append(out)
    return messages


def _number(body: dict[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ApiError(400, f"'{key}' must be a number between {low} and {high}", param=key)
    return float(value)


def _stop(body: dict[str, Any]) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    if isinstance(stop, list) and all(isinstance(item, str) for item in stop):
        return list(stop)
    raise ApiError(400, "'stop' must be a string or a list of strings", param="stop")


class ChatServer:
    """The request handling, independent of HTTP (used by the handler and tests)."""

    def __init__(self, model: LocalModel, *, served_name: str | None = None) -> None:
        self.model = model
        self.served_name = served_name or model.name
        self.created = int(time.time())
        template = str(model.loaded.llama.metadata.get("tokenizer.chat_template", ""))
        #: Hermes/Qwen-style templates render ``tools`` and ``tool`` messages themselves.
        self.native_tools = "<tool_call>" in template and "tools" in template

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [self.model_card()]}

    def model_card(self) -> dict[str, Any]:
        return {
            "id": self.served_name,
            "object": "model",
            "created": self.created,
            "owned_by": "tao",
        }

    # -- chat completions -------------------------------------------------
    def _params(self, body: dict[str, Any]) -> dict[str, Any]:
        n = body.get("n", 1)
        if n != 1:
            raise ApiError(400, "only n=1 is supported", param="n")
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ApiError(400, "'max_tokens' must be a positive integer", param="max_tokens")
        params: dict[str, Any] = {
            "temperature": _number(body, "temperature", 1.0, 0.0, 2.0),
            "top_p": _number(body, "top_p", 1.0, 0.0, 1.0),
            "presence_penalty": _number(body, "presence_penalty", 0.0, -2.0, 2.0),
            "frequency_penalty": _number(body, "frequency_penalty", 0.0, -2.0, 2.0),
            "stop": _stop(body),
            "max_tokens": max_tokens or self.model.max_tokens,
        }
        seed = body.get("seed")
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise ApiError(400, "'seed' must be an integer", param="seed")
            params["seed"] = seed
        response_format = body.get("response_format")
        if response_format is not None:
            kind = response_format.get("type") if isinstance(response_format, dict) else None
            if kind == "json_object":
                params["response_format"] = {"type": "json_object"}
            elif kind == "json_schema":
                schema = (response_format.get("json_schema") or {}).get("schema")
                if not isinstance(schema, dict):
                    raise ApiError(
                        400,
                        "response_format.json_schema.schema is required",
                        param="response_format",
                    )
                params["response_format"] = {"type": "json_object", "schema": schema}
            elif kind != "text":
                raise ApiError(
                    400, f"unsupported response_format type {kind!r}", param="response_format"
                )
        grammar = body.get("grammar")
        if grammar is not None:
            if not isinstance(grammar, str):
                raise ApiError(400, "'grammar' must be GBNF text", param="grammar")
            try:
                params["grammar"] = self.model.loaded.grammar(grammar)
            except ModelError as error:
                raise ApiError(400, str(error), param="grammar") from error
        return params

    def chat(self, body: Any) -> dict[str, Any] | Iterator[dict[str, Any]]:
        """Answer one chat-completion request: a response, or chunks when streaming."""
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        messages = _normalise_messages(body.get("messages"))
        params = self._params(body)
        tools = body.get("tools")
        tool_choice = body.get("tool_choice")
        stream = bool(body.get("stream", False))
        requested = body.get("model")
        name = requested if isinstance(requested, str) and requested else self.served_name
        if tools is not None and (
            not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)
        ):
            raise ApiError(400, "'tools' must be a list of tool objects", param="tools")
        if tool_choice == "none" or not tools:
            tools, tool_choice = None, None
        if tools and stream:
            raise ApiError(400, "streaming is not supported together with tools", param="stream")
        if tools and "grammar" in params:
            raise ApiError(400, "'grammar' cannot be combined with tools", param="grammar")

        loaded = self.model.loaded
        if stream:
            return self._stream(messages, params, name)
        with loaded.lock:
            try:
                if tools:
                    response = self._chat_with_tools(messages, params, tools, tool_choice)
                else:
                    response = loaded.llama.create_chat_completion(messages=messages, **params)
            except ApiError:
                raise
            except (ValueError, RuntimeError, KeyError, TypeError) as error:
                raise ApiError(400, str(error)) from error
        response = dict(response)
        response["model"] = name
        response.setdefault("system_fingerprint", None)
        return response

    def _stream(
        self, messages: list[dict[str, Any]], params: dict[str, Any], name: str
    ) -> Iterator[dict[str, Any]]:
        loaded = self.model.loaded
        with loaded.lock:
            try:
                chunks = loaded.llama.create_chat_completion(
                    messages=messages, stream=True, **params
                )
                for chunk in chunks:
                    yield {**chunk, "model": name}
            except (ValueError, RuntimeError) as error:
                raise ApiError(400, str(error)) from error

    def _chat_with_tools(
        self,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        tools: list[dict[str, Any]],
        tool_choice: Any,
    ) -> dict[str, Any]:
        llama = self.model.loaded.llama
        if tool_choice == "required":
            if len(tools) != 1:
                raise ApiError(
                    400, "tool_choice 'required' needs exactly one tool here", param="tool_choice"
                )
            tool_choice = {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
        if tool_choice not in (None, "auto") and not isinstance(tool_choice, dict):
            raise ApiError(400, f"unsupported tool_choice {tool_choice!r}", param="tool_choice")
        if not self.native_tools:
            from llama_cpp import llama_chat_format

            # This format drops ``tool`` messages; give them to the model as user turns.
            rewritten = [
                {"role": "user", "content": f"Tool result: {m['content']}"}
                if m["role"] == "tool"
                else m
                for m in messages
            ]
            result: dict[str, Any] = llama_chat_format.chatml_function_calling(
                llama=llama,
                messages=rewritten,
                tools=tools,
                tool_choice=tool_choice or "auto",
                **params,
            )
            return result
        names = {str((t.get("function") or {}).get("name")) for t in tools}
        if not isinstance(tool_choice, dict):
            # A small model left free describes calls in prose; constrain it to the
            # template's <tool_call> JSON naming one of this request's tools.
            from tao.protocol.grammar import tool_call_grammar

            ordered = [str((t.get("function") or {}).get("name")) for t in tools]
            params = {**params, "grammar": self.model.loaded.grammar(tool_call_grammar(ordered))}
        response: dict[str, Any] = llama.create_chat_completion(
            messages=messages, tools=tools, tool_choice=tool_choice, **params
        )
        if isinstance(tool_choice, dict):
            return response  # llama-cpp-python already built tool_calls from the schema grammar
        return _parse_native_tool_calls(response, names)

    # -- HTTP --------------------------------------------------------------
    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(_Handler):
            chat_server = server

        return Handler


def _parse_native_tool_calls(response: dict[str, Any], tool_names: set[str]) -> dict[str, Any]:
    """Turn tool calls written as text into OpenAI ``tool_calls``.

    The template asks for ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``;
    small models sometimes write the same object in a fenced JSON block or bare,
    which is accepted too when ``name`` is one of this request's tools.
    """
    choice = dict(response["choices"][0])
    message = dict(choice["message"])
    text = message.get("content") or ""
    blocks = [m.group(1) for m in _TOOL_CALL.finditer(text)]
    if not blocks:
        blocks = [m.group(1) for m in _FENCED_JSON.finditer(text)] or [text.strip()]
    calls = []
    for block in blocks:
        try:
            call = json.loads(block)
        except ValueError:
            continue
        if not isinstance(call, dict) or call.get("name") not in tool_names:
            continue
        arguments = call.get("arguments", call.get("parameters", {}))
        calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
        )
    if calls:
        cut = min((i for i in (text.find("<tool_call>"), text.find("```")) if i >= 0), default=0)
        message["content"] = text[:cut].strip() or None
        message["tool_calls"] = calls
        choice["finish_reason"] = "tool_calls"
    choice["message"] = message
    return {**response, "choices": [choice]}


class _Handler(BaseHTTPRequestHandler):
    chat_server: ChatServer
    protocol_version = "HTTP/1.1"
    server_version = "tao-serve"

    def log_message(self, format: str, *args: Any) -> None:
        if not getattr(self.server, "quiet", False):
            sys.stderr.write(f"{self.address_string()} - {format % args}\n")

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    def do_GET(self) -> None:
        path = self._path()
        server = self.chat_server
        if path in ("/v1/models", "/models"):
            self._send_json(200, server.models())
        elif path.startswith(("/v1/models/", "/models/")):
            wanted = path.split("/models/", 1)[1]
            if wanted == server.served_name:
                self._send_json(200, server.model_card())
            else:
                self._send_json(
                    404, ApiError(404, f"model {wanted!r} not found", code="model_not_found").body()
                )
        elif path in ("/health", "/v1/health"):
            self._send_json(200, {"status": "ok", "model": server.served_name})
        else:
            self._send_json(404, ApiError(404, f"no route for GET {path}").body())

    def do_POST(self) -> None:
        path = self._path()
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._discard_body()
            self._send_json(404, ApiError(404, f"no route for POST {path}").body())
            return
        try:
            body = self._read_json()
            result = self.chat_server.chat(body)
            if isinstance(result, dict):
                self._send_json(200, result)
            else:
                self._send_stream(result)
        except ApiError as error:
            self._send_json(error.status, error.body())
        except TaoError as error:
            self._send_json(500, ApiError(500, str(error), kind="server_error").body())

    def _discard_body(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if 0 < length <= MAX_BODY_BYTES:
            self.rfile.read(length)
        else:
            self.close_connection = True

    def _read_json(self) -> Any:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length <= 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            raise ApiError(400 if length <= 0 else 413, "missing or oversized request body")
        raw = self.rfile.read(length)
        try:
            return json.loads(raw)
        except ValueError as error:
            raise ApiError(400, f"request body is not valid JSON: {error}") from error

    def _send_stream(self, chunks: Iterator[dict[str, Any]]) -> None:
        try:
            first = next(chunks, None)
        except ApiError as error:
            self._send_json(error.status, error.body())
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            if first is not None:
                self._event(first)
            for chunk in chunks:
                self._event(chunk)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except ApiError as error:
            self._event(error.body())
        except OSError:
            pass  # the client went away
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()  # releases the model lock if the generator is still open

    def _event(self, payload: dict[str, Any]) -> None:
        self.wfile.write(
            b"data: " + json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n\n"
        )
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    quiet = False


def make_server(
    model: LocalModel, host: str = "127.0.0.1", port: int = 8000, *, quiet: bool = False
) -> ThreadingHTTPServer:
    """Build (but do not start) the HTTP server for ``model``; ``port=0`` picks a free one."""
    chat = ChatServer(model)
    server = _Server((host, port), chat.handler())
    server.quiet = quiet
    return server


def serve_forever(
    model: LocalModel, host: str = "127.0.0.1", port: int = 8000, *, quiet: bool = False
) -> None:
    """Serve until interrupted, printing the base URL once it listens."""
    server = make_server(model, host, port, quiet=quiet)
    bound_port = server.server_address[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"tao serve: {model.name} at http://{shown}:{bound_port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def _load(spec: str) -> LocalModel:
    kind, _, rest = spec.partition(":")
    if kind != "local":
        raise SystemExit(f"tao serve: only local models can be served (got {spec!r})")
    return LocalModel(Path(rest).expanduser() if rest else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tao.serve")
    parser.add_argument("--model", default="local")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        model = _load(args.model)
    except TaoError as error:
        print(f"tao serve: {error}", file=sys.stderr)
        return 2
    serve_forever(model, args.host, args.port, quiet=args.quiet)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
