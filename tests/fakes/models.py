"""A scripted model for long runs, shared by the reliability tests and ``bench/runlog.py``.

It asks the calculator a different sum at every step (so no call is a repeat) and
answers at step ``steps``; with ``pause_s`` each reply takes that long, to leave time
for a database restart mid-run.
"""

from __future__ import annotations

import time

from tao.models.base import ModelReply, ModelRequest, OnText


class CalculatorScript:
    """Asks the calculator ``steps - 1`` times, then answers; costs next to nothing."""

    name = "scripted"
    supports_stop = True
    supports_grammar = False
    supports_tools = False

    def __init__(self, steps: int, pause_s: float = 0.0) -> None:
        self.steps, self.pause_s, self.calls = steps, pause_s, 0

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        if self.pause_s:
            time.sleep(self.pause_s)
        self.calls += 1
        n = self.calls
        if n >= self.steps:
            return ModelReply(text="Thought: I have the total.\nAction: finish[done]")
        text = f"Thought: Step {n}: add {n} to the running total.\nAction: calculator[{n} + {n}]"
        return ModelReply(text=text, input_tokens=len(request.messages), output_tokens=12)

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        return self.complete(request, on_text)
