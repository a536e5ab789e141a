"""What a model call cost in US dollars, from pydantic's maintained price table (issue 15).

``None`` means *unknown*, never a guessed zero: a model the table does not list (a
``replay:`` file, a model served under its own name by vLLM, Ollama or ``tao serve``),
or a backend that reports no price. The embedded ``local`` model is the one model
known to cost nothing: it runs in this process, and no provider bills it, so its
replies say ``0.0``.

A provider backend prices each reply itself (:class:`tao.models.sdk.SdkModel`):

    key = PriceKey("openai", "gpt-4o-mini", base_url=None)
    cost_usd(key, Tokens(input=1000, output=100))   # 0.00021
    cost_usd(PriceKey("openai", "qwen2.5", None), Tokens(1000, 100))   # None

The price is the provider's list price for the model *name* (``openai:gpt-4o`` is
priced as OpenAI's gpt-4o). With a ``base_url`` the table is first asked which
provider serves that URL (Groq, OpenRouter, Together…); a URL it does not know (a
proxy, a test server) is priced as the spec's provider.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from tao.models.backends import BACKENDS

#: The price table's name for each provider prefix of a model spec (from the backends' records).
PROVIDERS = {b.prefix: b.price_provider for b in BACKENDS if b.price_provider is not None}


@dataclass(frozen=True, slots=True)
class PriceKey:
    """Which price applies: the spec's provider prefix, the model name, the server's URL."""

    provider: str
    """The model spec's prefix: ``openai``, ``anthropic``, ``gemini``."""
    model: str
    """The model name as sent to the API (``gpt-4o-mini``)."""
    base_url: str | None = None
    """A compatible server or proxy instead of the provider's own API."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """One call's tokens as the provider reported them.

    ``input`` counts every prompt token, cached ones included; ``cache_read`` and
    ``cache_write`` say how many of them were read from or written to the provider's
    prompt cache (billed at their own rates), where the provider reports it.
    """

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0


@runtime_checkable
class Priced(Protocol):
    """A model that can tell, before a run, whether its calls will carry a price."""

    def cost_known(self) -> bool:
        """Whether this model's replies carry ``cost_usd`` (``--max-cost`` needs it)."""
        ...


def cost_usd(key: PriceKey, tokens: Tokens) -> float | None:
    """The call's price in US dollars, or ``None`` when the price table has no price for it."""
    where = _where(key)
    if where is None:
        return None
    try:
        return _price(key.model, where, tokens)
    except (LookupError, ValueError, ArithmeticError):  # odd counts: unknown, the run goes on
        return None


def known(key: PriceKey) -> bool:
    """Whether :func:`cost_usd` has a price for ``key``."""
    return _where(key) is not None


def cost_known(model: object) -> bool:
    """Whether ``model``'s replies will say what they cost (see :class:`Priced`)."""
    return isinstance(model, Priced) and model.cost_known()


@functools.lru_cache(maxsize=64)
def _where(key: PriceKey) -> tuple[str, str] | None:
    """Where the table prices ``key``: ``("url", base_url)`` or ``("provider", id)``; ``None``
    when it lists no such model. Asked once per key (a failed lookup costs milliseconds)."""
    tries = [("url", key.base_url)] if key.base_url else []
    if key.provider in PROVIDERS:
        tries.append(("provider", PROVIDERS[key.provider]))
    for where in tries:
        try:
            _price(key.model, where, Tokens(0, 0))
        except LookupError:  # the table lists no such provider or model
            continue
        return where
    return None


def _price(model: str, where: tuple[str, str], tokens: Tokens) -> float:
    """The table's price; a :class:`LookupError` when it has none."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError as error:  # pragma: no cover - a core dependency: unknown, not a crash
        raise LookupError("genai-prices is not installed") from error
    usage = Usage(
        input_tokens=tokens.input,
        output_tokens=tokens.output,
        cache_read_tokens=min(tokens.cache_read, tokens.input),
        cache_write_tokens=min(tokens.cache_write, max(tokens.input - tokens.cache_read, 0)),
    )
    kind, value = where
    if kind == "url":
        return float(calc_price(usage, model, provider_api_url=value).total_price)
    return float(calc_price(usage, model, provider_id=value).total_price)
