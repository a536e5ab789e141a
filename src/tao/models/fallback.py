"""Fallback models: the next model takes the same request when the current one cannot answer.

    model = FallbackModel([load_model("anthropic:claude-sonnet-5"), load_model("openai:gpt-5")])
    reply = model.complete(request)
    reply.model, reply.failures   # "openai:gpt-5", ("anthropic:claude-sonnet-5: cannot reach ...",)

Only a :class:`tao.ModelUnreachableError` moves on (no connection, a timeout, a rate
limit or server error that outlasted the SDK's retries, an unknown model): another
provider may answer those. A request a server rejected (400, a bad key) fails as it
would alone, and a reply that does not parse is the loop's business (a format
reminder), never a reason to ask another model. Every model is tried in order on every
call: a provider that is down for one step may be back for the next.

The run speaks the protocol all its models speak (native tool calling only when every
one does), so the transcript any of them left reads the same to the next.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

from tao.errors import ConfigError, ModelError, ModelUnreachableError
from tao.models.base import Model, ModelReply, ModelRequest, OnText
from tao.models.pricing import cost_known


class FallbackModel:
    """Several models as one: the first that answers a request answers it."""

    def __init__(self, models: Sequence[Model]) -> None:
        if not models:
            raise ConfigError("fallback models: give at least one model")
        self.models = tuple(models)
        #: The first model's spec: the run is recorded under it.
        self.name = self.models[0].name
        self.supports_stop = all(m.supports_stop for m in self.models)
        self.supports_grammar = all(m.supports_grammar for m in self.models)
        self.supports_tools = all(m.supports_tools for m in self.models)

    def cost_known(self) -> bool:
        """A cost limit can be kept only if every model that may answer has a price."""
        return all(cost_known(m) for m in self.models)

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        failures: list[str] = []
        for model in self.models:
            try:
                reply = model.complete(request, on_text)
            except ModelUnreachableError as error:
                failures.append(str(error))
                continue
            return self._answered(model, reply, failures)
        raise self._none_answered(failures)

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        failures: list[str] = []
        for model in self.models:
            try:
                reply = await _acomplete(model, request, on_text)
            except ModelUnreachableError as error:
                failures.append(str(error))
                continue
            return self._answered(model, reply, failures)
        raise self._none_answered(failures)

    def _answered(self, model: Model, reply: ModelReply, failures: list[str]) -> ModelReply:
        """``reply`` naming the model that gave it and the failures before it (the trace)."""
        if model is self.models[0] and not failures:
            return reply
        return dataclasses.replace(reply, model=model.name, failures=tuple(failures))

    def _none_answered(self, failures: list[str]) -> ModelError:
        return ModelUnreachableError("no model answered: " + "; ".join(failures))


async def _acomplete(model: Model, request: ModelRequest, on_text: OnText | None) -> ModelReply:
    """A hand-written model may have only ``complete``: it runs in a worker thread."""
    if getattr(model, "acomplete", None) is None:
        return await asyncio.to_thread(model.complete, request, on_text)
    return await model.acomplete(request, on_text)


def with_fallbacks(primary: Model, fallbacks: Sequence[Model]) -> Model:
    """``primary`` alone when there is nothing to fall back on (no wrapper, no cost)."""
    return FallbackModel([primary, *fallbacks]) if fallbacks else primary
