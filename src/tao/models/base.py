"""What every model backend offers: one :class:`ModelRequest` in, one :class:`ModelReply` out.

A backend is any object with ``name``, the ``supports_*`` flags and
:meth:`Model.complete` / :meth:`Model.acomplete`. The loop speaks chat messages in
the OpenAI shape because every provider maps onto it; each backend translates.

    model = load_model("replay:replies.json")
    reply = model.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    reply.text, reply.input_tokens
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from tao.state.frozen import frozen
from tao.state.jsontypes import JSONObject
from tao.state.message import FunctionCall as FunctionCall  # the chat shapes live below
from tao.state.message import Message as Message
from tao.state.message import ToolCallMessage as ToolCallMessage

#: Receives text as the backend streams it; called once with the whole text if it cannot stream.
OnText = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as native tool calling describes it: name, description, JSON schema."""

    name: str
    description: str
    parameters: JSONObject = field(default_factory=dict)
    """Takes no arguments when empty."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A structured call a model returned; ``arguments`` is the decoded JSON object.

    ``raw_arguments`` keeps the text the model sent, so a call whose JSON does not
    decode can still be shown, and answered with an error Observation (L4).
    """

    id: str
    name: str
    arguments: JSONObject = field(default_factory=dict)
    raw_arguments: str = ""


@frozen(kw_only=True)
class ModelRequest:
    """Everything one model call needs; backends map it to their SDK and nothing else."""

    #: The transcript so far, system prompt first.
    messages: Sequence[Message]
    #: Native tool calling: the tools the model may call; ``None`` for the text protocol.
    tools: Sequence[ToolSpec] | None = None
    #: Native tool calling: the reply must call one of ``tools`` (OpenAI's ``tool_choice:
    #: "required"``). tao's native loop asks for it, since ``finish`` is a tool there and a
    #: reply in plain text is a mistake it can only answer with "called no tool".
    require_tool: bool = False
    #: Stop sequences; a backend that does not honour them leaves the cut to the loop (L3).
    stop: Sequence[str] = ()
    #: A GBNF grammar for backends that constrain decoding (the embedded model).
    grammar: str | None = None
    #: The most tokens the reply may have.
    max_tokens: int | None = None
    temperature: float = 0.0
    #: The longest one call may take, retries included; ``None`` is the backend's default.
    timeout_s: float | None = None
    #: What a provider's prompt cache may group this request with (the run id, so each
    #: run's growing transcript finds its own earlier prefix); ``None``: no hint.
    cache_key: str | None = None


@frozen(kw_only=True)
class ModelReply:
    """One model reply and what it cost.

    ``evaluated_tokens`` is the number of prompt tokens the backend really processed (a
    local KV cache makes it smaller than ``input_tokens``); ``None`` when it cannot tell.
    """

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    evaluated_tokens: int | None = None
    finish_reason: str | None = None
    #: Native tool calls, in the model's order; empty for the text protocol.
    tool_calls: tuple[ToolCall, ...] = ()
    #: Prompt tokens the provider read from its prompt cache (part of ``input_tokens``).
    cache_read_tokens: int = 0
    #: Prompt tokens the provider wrote to its prompt cache (part of ``input_tokens``).
    cache_write_tokens: int = 0
    #: What the call cost in US dollars (:mod:`tao.models.pricing`); ``None``: unknown,
    #: never a guess.
    cost_usd: float | None = None
    #: The model that answered, when a fallback model did (:mod:`tao.models.fallback`);
    #: ``None``: the run's own model.
    model: str | None = None
    #: Why the models tried before it did not answer, one line each.
    failures: tuple[str, ...] = ()


@runtime_checkable
class Model(Protocol):
    """The backend interface the agent drives; see :func:`tao.models.load_model`."""

    #: The spec this model was loaded from, e.g. ``"openai:gpt-4o-mini"``.
    name: str
    #: Whether the backend honours ``stop``; if not, the loop cuts client-side (SPEC L3).
    supports_stop: bool
    #: Whether the backend honours a GBNF ``grammar`` (the embedded model does).
    supports_grammar: bool
    #: Whether the backend does native tool calling (``tools`` in, ``tool_calls`` out).
    supports_tools: bool

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        """The reply to ``request``; raises :class:`tao.ModelError` on failure.

        With ``on_text``, text deltas reach it as they arrive.
        """
        ...

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        """The same call without blocking the event loop (``Agent.arun``)."""
        ...
