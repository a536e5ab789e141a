"""What every model backend offers the loop: text in, text out, tokens counted.

A backend is any object with ``name``, ``supports_stop``, ``supports_grammar``
and :meth:`Model.complete`. The loop sends chat messages in the OpenAI shape
(``{"role": ..., "content": ...}``) because every provider maps onto it.

    model = load_model("replay:replies.json")
    reply = model.complete([{"role": "user", "content": "hi"}], stop=["Observation:"])
    reply.text, reply.input_tokens
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

#: One chat message, ``{"role": "system" | "user" | "assistant", "content": str}``.
Message = dict[str, str]


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


@runtime_checkable
class Model(Protocol):
    """The backend interface the loop drives; see :func:`tao.models.load_model`."""

    #: The spec this model was loaded from, e.g. ``"openai:gpt-4o-mini"``.
    name: str
    #: Whether the backend honours ``stop``; if not, the loop cuts client-side (SPEC L3).
    supports_stop: bool
    #: Whether the backend honours a GBNF ``grammar`` (the embedded model does).
    supports_grammar: bool

    def complete(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        max_tokens: int | None = None,
        grammar: str | None = None,
    ) -> Completion:
        """Return the model's reply to ``messages``; raise :class:`tao.ModelError` on failure."""
        ...
