"""What every model backend offers the loop: text in, text out, tokens counted.

A backend is any object with ``name``, ``supports_stop``, ``supports_grammar``
and :meth:`Model.complete`. The loop sends chat messages in the OpenAI shape
(``{"role": ..., "content": ...}``) because every provider maps onto it.

    model = load_model("replay:replies.json")
    reply = model.complete([{"role": "user", "content": "hi"}], stop=["Observation:"])
    reply.text, reply.input_tokens
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

#: One chat message in the OpenAI shape: ``{"role": ..., "content": str}``; with native tool
#: calling also ``{"role": "assistant", "content": ..., "tool_calls": [...]}`` and
#: ``{"role": "tool", "tool_call_id": ..., "content": ...}``. Backends translate it.
Message = dict[str, Any]

#: Receives text as the backend streams it; called once with the whole text if it cannot stream.
OnText = Callable[[str], None]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as native tool calling describes it: name, description, JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A structured call a model returned; ``arguments`` is the decoded JSON object.

    ``raw_arguments`` keeps the text the model sent, so a call whose JSON does not
    decode can still be shown, and answered with an error Observation (L4).
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str = ""


@dataclass(frozen=True)
class Completion:
    """One model reply and what it cost.

    ``evaluated_tokens`` is the number of prompt tokens the backend actually
    processed (a local KV cache makes it smaller than ``input_tokens``); ``None``
    when the backend cannot tell.
    """

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    evaluated_tokens: int | None = None
    finish_reason: str | None = None
    #: Native tool calls, in the model's order; empty for the text protocol.
    tool_calls: tuple[ToolCall, ...] = ()


@runtime_checkable
class Model(Protocol):
    """The backend interface the loop drives; see :func:`tao.models.load_model`."""

    #: The spec this model was loaded from, e.g. ``"openai:gpt-4o-mini"``.
    name: str
    #: Whether the backend honours ``stop``; if not, the loop cuts client-side (SPEC L3).
    supports_stop: bool
    #: Whether the backend honours a GBNF ``grammar`` (the embedded model does).
    supports_grammar: bool
    #: Whether the backend does native tool calling (``tools=`` in, ``tool_calls`` out).
    supports_tools: bool

    def complete(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        max_tokens: int | None = None,
        grammar: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
        on_text: OnText | None = None,
    ) -> Completion:
        """Return the model's reply to ``messages``; raise :class:`tao.ModelError` on failure.

        With ``tools``, the backend uses native tool calling and returns ``tool_calls``.
        With ``on_text``, it streams text deltas to it as they arrive.
        """
        ...


@runtime_checkable
class AsyncModel(Model, Protocol):
    """A backend that can also answer without blocking a thread (``Agent.arun``)."""

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        max_tokens: int | None = None,
        grammar: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
        on_text: OnText | None = None,
    ) -> Completion:
        """The awaitable twin of :meth:`Model.complete`, same arguments, same result."""
        ...
