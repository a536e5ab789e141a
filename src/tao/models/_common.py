"""What the provider backends share: decoding tool arguments, naming errors, async clients.

Both ``openai`` and ``anthropic`` SDKs raise the same family of exceptions
(``AuthenticationError``, ``NotFoundError``, ``APIConnectionError``, ...), so one
function turns either into a one-line :class:`tao.ModelError`.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from tao.errors import ModelError
from tao.models.base import ToolCall

Client = TypeVar("Client")


def decode_arguments(raw: str) -> dict[str, Any]:
    """The JSON object a model wrote as arguments; ``{}`` if it is not one (never raises)."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def tool_call(call_id: str, name: str, raw: str) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=decode_arguments(raw), raw_arguments=raw)


def api_message(error: Any) -> str:
    """The server's own message inside an SDK error, else the error's text, on one line."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return " ".join(str(inner["message"]).split())
    return " ".join(str(getattr(error, "message", None) or error).split())


def sdk_error(sdk: Any, name: str, where: str, error: Exception) -> ModelError:
    """One clear line for an error of a Stainless-built SDK (``openai``, ``anthropic``)."""
    if isinstance(error, sdk.AuthenticationError):
        return ModelError(f"{name}: the API key was rejected ({api_message(error)})")
    if isinstance(error, sdk.PermissionDeniedError):
        return ModelError(f"{name}: permission denied ({api_message(error)})")
    if isinstance(error, sdk.NotFoundError):
        return ModelError(f"{name}: model or endpoint not found ({api_message(error)})")
    if isinstance(error, sdk.BadRequestError):
        return ModelError(f"{name} rejected the request: {api_message(error)}")
    if isinstance(error, sdk.RateLimitError):
        return ModelError(f"{name}: rate limited, retries exhausted ({api_message(error)})")
    if isinstance(error, sdk.APITimeoutError):
        return ModelError(f"{name}: {where} timed out")
    if isinstance(error, sdk.APIConnectionError):
        return ModelError(f"{name}: cannot reach {where} ({error})")
    if isinstance(error, sdk.APIStatusError):
        return ModelError(f"{name}: server answered {error.status_code} ({api_message(error)})")
    return ModelError(f"{name}: {' '.join(str(error).split())}")


def finish_reason(reason: str | None, has_calls: bool) -> str | None:
    """A provider's stop reason in the OpenAI vocabulary (stop, length, tool_calls, ...)."""
    if reason is None:
        return "tool_calls" if has_calls else None
    key = reason.lower()
    if has_calls and key in {"stop", "end_turn", "tool_use", "tool_calls"}:
        return "tool_calls"
    return FINISH_REASONS.get(key, key)


FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "safety": "content_filter",
    "recitation": "content_filter",
    "blocklist": "content_filter",
    "prohibited_content": "content_filter",
    "spii": "content_filter",
}


class PerLoop(Generic[Client]):
    """One async SDK client per event loop: an HTTP pool must not outlive its loop."""

    def __init__(self, make: Callable[[], Client]) -> None:
        self._make = make
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Client] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> Client:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._make()
        return client
