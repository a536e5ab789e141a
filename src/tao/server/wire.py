"""The OpenAI wire format that ``tao serve`` answers in, as types (SPEC M5, L3).

Only the fields the official ``openai`` SDK reads are listed. A response is built as one
of these TypedDicts and handed to :func:`json.dumps` as it is; mypy checks the shape
instead of a test finding a misspelt key.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from tao.errors import FatalError
from tao.models.base import ToolCallMessage

__all__ = [
    "ApiError",
    "ChatCompletion",
    "ChatCompletionChunk",
    "Choice",
    "ChunkChoice",
    "Delta",
    "ErrorBody",
    "ErrorDetail",
    "FunctionDelta",
    "Health",
    "ModelCard",
    "ModelList",
    "PromptDetails",
    "ReplyMessage",
    "ToolCallDelta",
    "WireUsage",
]


class ErrorDetail(TypedDict):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorBody(TypedDict):
    """OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}``."""

    error: ErrorDetail


class ModelCard(TypedDict):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str


class ModelList(TypedDict):
    object: Literal["list"]
    data: list[ModelCard]


class Health(TypedDict):
    status: Literal["ok"]
    model: str


class ReplyMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None
    tool_calls: NotRequired[list[ToolCallMessage]]


class Choice(TypedDict):
    index: int
    message: ReplyMessage
    finish_reason: str | None
    logprobs: None


class PromptDetails(TypedDict):
    #: Prompt tokens the model did not evaluate again: its KV cache held them.
    cached_tokens: int


class WireUsage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: NotRequired[PromptDetails]


class ChatCompletion(TypedDict):
    """The answer to a ``POST /v1/chat/completions`` without ``stream``."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice]
    usage: WireUsage
    system_fingerprint: None


class FunctionDelta(TypedDict, total=False):
    name: str
    arguments: str


class ToolCallDelta(TypedDict):
    """A piece of a streamed call: the first names it (``id``, ``type``, ``function.name``),
    the next ones carry pieces of ``function.arguments``, all under one ``index``."""

    index: int
    id: NotRequired[str]
    type: NotRequired[Literal["function"]]
    function: FunctionDelta


class Delta(TypedDict, total=False):
    role: Literal["assistant"]
    content: str | None
    tool_calls: list[ToolCallDelta]


class ChunkChoice(TypedDict):
    index: int
    delta: Delta
    finish_reason: str | None
    logprobs: None


class ChatCompletionChunk(TypedDict):
    """One server-sent event of a streamed answer. With ``stream_options.include_usage``
    every chunk has ``usage``: ``None``, but the last one before ``[DONE]``, which has no
    choices and the whole reply's usage (as OpenAI streams it)."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    choices: list[ChunkChoice]
    system_fingerprint: None
    usage: NotRequired[WireUsage | None]


class ApiError(FatalError):
    """A request the server refuses, answered in OpenAI's ``{"error": {...}}`` shape.

    A subclass of :class:`tao.FatalError` because the request cannot go on; it never
    leaves the server: the HTTP handler turns it into a response with ``status``.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        #: Seconds to wait before trying again (429, 503): sent as ``Retry-After``.
        self.retry_after = retry_after
        self.message = message
        self.kind = kind
        self.param = param
        self.code = code

    def body(self) -> ErrorBody:
        return {
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        }
