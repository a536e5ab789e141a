"""A chat message in the OpenAI shape: what the transcript, the run log and every backend
exchange. Types only, below everything that stores or sends messages (the run's state
records them, :mod:`tao.models.base` re-exports them for backends)."""

from __future__ import annotations

from typing import Literal, TypedDict


class FunctionCall(TypedDict):
    name: str
    arguments: str


class ToolCallMessage(TypedDict):
    """One entry of an assistant message's ``tool_calls`` (native tool calling)."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class Message(TypedDict, total=False):
    """One chat message in the OpenAI shape; a plain dict at run time, so storing it is free.

    ``{"role": "system"|"user"|"assistant", "content": str}``; with native tool calling also
    ``{"role": "assistant", "content": ..., "tool_calls": [...]}`` and
    ``{"role": "tool", "tool_call_id": ..., "content": ...}``.
    """

    role: str
    content: str | None
    tool_calls: list[ToolCallMessage]
    tool_call_id: str
