"""The limits every run has (SPEC L5): steps, wall-clock seconds, tokens; money if set.

Running out is a status (``max_steps``, with a ``stop_reason`` naming the limit),
never an exception. The limits' defaults and ranges are RunConfig's fields
(:mod:`tao.state.config`), small on purpose: the ReAct paper used 7 steps for
HotpotQA and 5 for FEVER.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from tao.state import codec, migrations
from tao.state.frozen import frozen
from tao.state.jsontypes import JSON, JSONObject


@frozen
class ChildRun:
    """The run an agent-as-tool call started (``Agent.as_tool``) and what it spent, which
    the parent's usage counts as its own."""

    run_id: str
    input_tokens: int = 0
    output_tokens: int = 0
    #: ``None``: unknown (a model with no price), which makes the parent's total unknown.
    cost_usd: float | None = 0.0


class Metered(Protocol):
    """What :meth:`Usage.plus` reads of a step (a :class:`tao.state.result.Step`).

    Named by shape so that usage sits here, beside the limits it is checked against,
    below the trace that records it.
    """

    @property
    def call_index(self) -> int: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def evaluated_tokens(self) -> int | None: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def child(self) -> ChildRun | None:
        """The run an agent-as-tool call started, with what it spent."""
        ...

    @property
    def billed(self) -> bool:
        """Whether the provider bills this call (a failed call is not billed)."""
        ...


@frozen(kw_only=True)
class Usage:
    """Totals over a run; ``evaluated_tokens`` shows what a KV cache saved.

    ``cost_usd`` is the run's money cost in US dollars, ``None`` when unknown: once one
    answered model call has no price, the total is unknown too (never a partial sum
    passed off as the whole). A failed call adds nothing (providers do not bill errors).
    """

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    evaluated_tokens: int | None = None
    cost_usd: float | None = 0.0

    def plus(self, step: Metered) -> Usage:
        """These totals with ``step`` counted (a parallel call of a counted reply adds only
        what the child run it started spent, if it started one)."""
        child = self._child(step.child)
        if step.call_index:
            return child
        evaluated = child.evaluated_tokens
        if step.evaluated_tokens is not None:
            evaluated = (evaluated or 0) + step.evaluated_tokens
        cost = child.cost_usd
        if step.billed:
            cost = None if cost is None or step.cost_usd is None else cost + step.cost_usd
        return Usage(
            model_calls=child.model_calls + 1,
            input_tokens=child.input_tokens + step.input_tokens,
            output_tokens=child.output_tokens + step.output_tokens,
            evaluated_tokens=evaluated,
            cost_usd=cost,
        )

    def _child(self, child: ChildRun | None) -> Usage:
        """These totals with what an agent-as-tool run spent, if a step started one: its
        tokens and cost, not its model calls (the parent's step budget counts its own)."""
        if child is None:
            return self
        cost = self.cost_usd
        cost = None if cost is None or child.cost_usd is None else cost + child.cost_usd
        return dataclasses.replace(
            self,
            input_tokens=self.input_tokens + child.input_tokens,
            output_tokens=self.output_tokens + child.output_tokens,
            cost_usd=cost,
        )

    def to_json(self) -> JSONObject:
        return codec.encode(self)

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> Usage:
        """Read :meth:`to_json`'s JSON; one written before costs were kept has an unknown cost
        (:data:`tao.state.migrations.USAGE_MISSING`); a wrong shape is a ``ValueError``."""
        return codec.decode(cls, dict(data), "usage")


class Limits(Protocol):
    """What a budget is made from: a :class:`tao.state.config.RunConfig`, whose fields of
    these names declare the defaults and ranges, once, and check them when it is made."""

    @property
    def max_steps(self) -> int: ...
    @property
    def max_seconds(self) -> float: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def max_cost_usd(self) -> float | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """Limits of one run, made by :meth:`Budget.of` a run's settings (:class:`Limits`)."""

    max_steps: int
    max_seconds: float
    max_tokens: int
    max_cost_usd: float | None
    """US dollars; ``None``: no money limit. Checked before each model call, like tokens,
    so the call that crosses it is the last one."""

    @classmethod
    def of(cls, limits: Limits) -> Budget:
        """The budget of a run with these settings (SPEC L5), money included when set.

        Here and not a method of the settings record: that record need not stand on
        ``Usage`` and its codec to be read (the import chain stays short)."""
        return cls(
            max_steps=limits.max_steps,
            max_seconds=limits.max_seconds,
            max_tokens=limits.max_tokens,
            max_cost_usd=limits.max_cost_usd,
        )

    def exhausted(self, steps_taken: int, elapsed_s: float, usage: Usage) -> str | None:
        """Which limit is spent, as a sentence for the trace, or ``None`` to go on.

        ``steps_taken`` counts model replies: parallel calls of one reply are one step.
        The caller measures ``elapsed_s``: the budget reads no clock.
        """
        if steps_taken >= self.max_steps:
            return f"step limit of {self.max_steps} reached"
        if (late := self.out_of_time(elapsed_s)) is not None:
            return late
        if usage.input_tokens + usage.output_tokens >= self.max_tokens:
            return f"token limit of {self.max_tokens:,} reached"
        return self._money(usage.cost_usd)

    def out_of_time(self, elapsed_s: float) -> str | None:
        """The time limit's verdict alone: a model call it cut short ends the run as a
        spent budget, not as a failed backend."""
        if elapsed_s >= self.max_seconds:
            return f"time limit of {self.max_seconds:g} s reached"
        return None

    def _money(self, cost_usd: float | None) -> str | None:
        """The cost budget's verdict; a cost that became unknown cannot be kept under it."""
        if self.max_cost_usd is None:
            return None
        limit = _usd(self.max_cost_usd)
        if cost_usd is None:
            return f"cost limit of {limit} cannot be kept: the cost is unknown"
        if cost_usd >= self.max_cost_usd:
            return f"cost limit of {limit} reached ({_usd(cost_usd)} spent)"
        return None


def _usd(amount: float) -> str:
    """``$0.5``, ``$0.000023``: dollars to the millionth, without trailing zeros."""
    return "$" + f"{amount:.6f}".rstrip("0").rstrip(".")


codec.shape(Usage, missing=migrations.USAGE_MISSING)
