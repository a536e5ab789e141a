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
    "Health",
    "ModelCard",
    "ModelList",
    "ReplyMessage",
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


class WireUsage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(TypedDict):
    """The answer to a ``POST /v1/chat/completions`` without ``stream``."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice]
    usage: WireUsage
    system_fingerprint: None


class Delta(TypedDict, total=False):
    role: Literal["assistant"]
    content: str


class ChunkChoice(TypedDict):
    index: int
    delta: Delta
    finish_reason: str | None
    logprobs: None


class ChatCompletionChunk(TypedDict):
    """One server-sent event of a streamed answer."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    choices: list[ChunkChoice]
    system_fingerprint: None


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
