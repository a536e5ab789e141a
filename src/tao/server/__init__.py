"""``tao serve``: a model behind an OpenAI-compatible HTTP API (SPEC M5, L3, S9).

Endpoints, in the OpenAI wire format so the official ``openai`` SDK works:

* ``GET /v1/models`` and ``GET /v1/models/{id}``
* ``POST /v1/chat/completions``: ``messages``, ``stop``, ``temperature``,
  ``max_tokens`` / ``max_completion_tokens``, ``stream``, ``response_format``
  (``json_object``, ``json_schema``), ``tools`` / ``tool_choice``, and a ``grammar``
  extension field (GBNF text, e.g. from :func:`tao.protocol.grammar.react_grammar`).
  ``top_p``, the penalties and ``seed`` are checked and accepted. Responses carry ``usage``.
* ``GET /health``

:mod:`tao.server.chat_request` checks a request, :mod:`tao.server.openai_api` answers it
through :meth:`tao.models.Model.complete` (:mod:`tao.server.tool_prompt` gives tools to a
model without native tool calling), :mod:`tao.server.wire` types the answers,
:mod:`tao.server.http` is the ASGI app (Starlette), :mod:`tao.server.streaming` its
server-sent events and :mod:`tao.server.queue` the wait line for the one model.
:mod:`tao.server.guard` (Host, Origin, media type, body bounds) and
:mod:`tao.server.runner` (uvicorn with timeouts and limits) serve ``tao ui`` too.
The command is ``tao serve`` (:mod:`tao.cli.serve`); it binds 127.0.0.1 unless told otherwise.

    from tao.models.local import LocalModel
    from tao.server import Running, make_app

    with Running(make_app(LocalModel()), port=0) as running:
        print(running.url)
"""

from __future__ import annotations

from tao.server.chat_request import ChatRequest, read_chat_request
from tao.server.http import MAX_BODY_BYTES, make_app, serve_forever
from tao.server.openai_api import ChatServer
from tao.server.runner import Running
from tao.server.wire import ApiError

__all__ = [
    "MAX_BODY_BYTES",
    "ApiError",
    "ChatRequest",
    "ChatServer",
    "Running",
    "make_app",
    "read_chat_request",
    "serve_forever",
]
