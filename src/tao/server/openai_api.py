"""The ``/v1`` API of ``tao serve``, independent of HTTP: models, chat completions, chunks.

A checked :class:`~tao.server.chat_request.ChatRequest` becomes one
:class:`tao.models.ModelRequest`, the model answers through :meth:`Model.complete`, and
the :class:`tao.models.ModelReply` goes back in the OpenAI shape (:mod:`tao.server.wire`).
Streaming is the same call with ``on_text``: each piece of text becomes a chunk.

    chat = ChatServer(LocalModel())
    chat.complete(read_chat_request(body))                 # a ChatCompletion
    chat.complete(request, on_text=lambda text: ...)       # text as it comes
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from tao.errors import ModelError
from tao.models.base import (
    FunctionCall,
    Model,
    ModelReply,
    ModelRequest,
    OnText,
    ToolCallMessage,
)
from tao.protocol.hermes import tool_call_grammar
from tao.server.chat_request import ChatRequest
from tao.server.tool_prompt import prompt_messages, read_tool_calls
from tao.server.wire import (
    ApiError,
    ChatCompletion,
    ChatCompletionChunk,
    Delta,
    ModelCard,
    ModelList,
    ReplyMessage,
    WireUsage,
)

__all__ = ["ChatServer", "Chunker", "Reply", "wire_usage"]


@dataclass(frozen=True, slots=True)
class Reply:
    """A model reply read for the wire: its prose, its tool calls, why it stopped."""

    content: str | None
    tool_calls: list[ToolCallMessage]
    finish_reason: str
    reply: ModelReply


def wire_usage(reply: ModelReply) -> WireUsage:
    """The reply's usage as OpenAI writes it; ``prompt_tokens_details.cached_tokens`` are
    the prompt tokens a local model's KV cache spared (its own prefix reuse)."""
    usage: WireUsage = {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }
    if reply.evaluated_tokens is not None:
        cached = max(0, reply.input_tokens - reply.evaluated_tokens)
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    elif reply.cache_read_tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cache_read_tokens}
    return usage


def _native_calls(reply: ModelReply) -> list[ToolCallMessage]:
    """A native tool-calling model's calls, as OpenAI writes them (arguments as JSON text)."""
    return [
        ToolCallMessage(
            id=call.id or f"call_{uuid.uuid4().hex[:24]}",
            type="function",
            function=FunctionCall(
                name=call.name,
                arguments=call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False),
            ),
        )
        for call in reply.tool_calls
    ]


class ChatServer:
    """The request handling of ``tao serve``, used by its HTTP handler and by tests.

    ``clock`` and ``new_id`` are injected so that an answer can be checked exactly.
    """

    def __init__(
        self,
        model: Model,
        *,
        served_name: str | None = None,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        self.model = model
        self.served_name = served_name or model.name
        self.clock = clock
        self.new_id = new_id
        self.created = int(clock())

    def models(self) -> ModelList:
        return {"object": "list", "data": [self.model_card()]}

    def model_card(self) -> ModelCard:
        return {
            "id": self.served_name,
            "object": "model",
            "created": self.created,
            "owned_by": "tao",
        }

    def prompted_tools(self, request: ChatRequest) -> bool:
        """The request's tools are described in the prompt and its calls read from the
        text (a model without native tool calling)."""
        return bool(request.tools) and not self.model.supports_tools

    def model_request(self, request: ChatRequest) -> ModelRequest:
        """The model call for ``request``: native tools if the model has them, else prompted."""
        if self.prompted_tools(request):
            schemas = {tool.name: tool.parameters for tool in request.tools}
            grammar = tool_call_grammar(schemas, required=request.tool_required)
            return ModelRequest(
                messages=prompt_messages(request.messages, request.tools),
                stop=request.stop,
                grammar=grammar if self.model.supports_grammar else None,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
            )
        if request.grammar is not None and not self.model.supports_grammar:
            raise ApiError(400, f"{self.model.name} does not take a grammar", param="grammar")
        return ModelRequest(
            messages=request.messages,
            tools=request.tools or None,
            stop=request.stop,
            grammar=request.grammar,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
        )

    def ask(self, request: ChatRequest, on_text: OnText | None = None) -> Reply:
        """Call the model once; a failure of the call is a 400 naming what went wrong."""
        try:
            reply = self.model.complete(self.model_request(request), on_text)
        except ModelError as error:  # e.g. an invalid grammar, a context overflow
            param = "grammar" if request.grammar is not None and "grammar" in str(error) else None
            raise ApiError(400, str(error), param=param) from error
        calls = _native_calls(reply)
        content: str | None = reply.text
        if self.prompted_tools(request):
            names = {tool.name for tool in request.tools}
            constrained = self.model.supports_grammar  # the reply is a call or text
            content, calls = read_tool_calls(reply.text, names, constrained=constrained)
        finish = "tool_calls" if calls else (reply.finish_reason or "stop")
        return Reply(content, calls, finish, reply)

    def complete(self, request: ChatRequest, on_text: OnText | None = None) -> ChatCompletion:
        """Answer a request without streaming; ``on_text`` sees the text as it comes (the
        server's :class:`~tao.server.hangup.Hangup` stops a call whose client left there)."""
        answer = self.ask(request, on_text)
        message: ReplyMessage = {"role": "assistant", "content": answer.content}
        if answer.tool_calls:
            message["tool_calls"] = answer.tool_calls
        return {
            "id": f"chatcmpl-{self.new_id()}",
            "object": "chat.completion",
            "created": int(self.clock()),
            "model": request.model or self.served_name,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": answer.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": wire_usage(answer.reply),
            "system_fingerprint": None,
        }

    def chunker(self, request: ChatRequest) -> Chunker:
        """A maker of the stream's chunks, all with one id and creation time."""
        return Chunker(
            id=f"chatcmpl-{self.new_id()}",
            created=int(self.clock()),
            model=request.model or self.served_name,
            include_usage=request.include_usage,
        )


@dataclass(frozen=True, slots=True)
class Chunker:
    """The chunks of one streamed answer: one id, one creation time; with
    ``include_usage`` each has ``usage: null`` and :meth:`usage` makes the last one."""

    id: str
    created: int
    model: str
    include_usage: bool

    def _chunk(self) -> ChatCompletionChunk:
        chunk: ChatCompletionChunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "system_fingerprint": None,
        }
        if self.include_usage:
            chunk["usage"] = None
        return chunk

    def __call__(self, delta: Delta, finish_reason: str | None = None) -> ChatCompletionChunk:
        chunk = self._chunk()
        chunk["choices"] = [
            {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        ]
        return chunk

    def usage(self, reply: ModelReply) -> ChatCompletionChunk:
        """The chunk after the finish reason: no choices, the whole reply's usage."""
        chunk = self._chunk()
        chunk["usage"] = wire_usage(reply)
        return chunk
