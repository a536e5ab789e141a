"""The limits every run has (SPEC L5): steps, wall-clock seconds, tokens; money if set.

Running out is a status (``max_steps``, with a ``stop_reason`` naming the limit),
never an exception. Defaults are small on purpose: the ReAct paper used 7 steps
for HotpotQA and 5 for FEVER.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tao.trace import Usage


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits of one run; ``Budget(max_steps=5)`` is the paper's FEVER setting."""

    max_steps: int = 8
    max_seconds: float = 300.0
    max_tokens: int = 100_000
    max_cost_usd: float | None = None
    """US dollars; ``None``: no money limit. Checked before each model call, like tokens,
    so the call that crosses it is the last one."""

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if self.max_seconds <= 0 or self.max_tokens <= 0:
            raise ValueError("max_seconds and max_tokens must be positive")
        if self.max_cost_usd is not None and not self.max_cost_usd > 0:
            raise ValueError("max_cost_usd must be positive")

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
