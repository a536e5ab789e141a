"""Record a run into the run log while it happens (SPEC M3).

:class:`RunRecorder` is a :class:`tao.trace.RunObserver`: the loop calls it at
the start, after every step and at the end. Each call is its own committed
transaction, so a run that is killed half-way keeps every step it finished,
and its row stays ``running`` (shown as ``interrupted`` once its process is
gone) instead of vanishing.

    store = Store.open()
    agent.run("What is 17 * 23 + 4?", observers=[RunRecorder(store, {"tools": ["calc"]})])

A failing write raises :class:`tao.StoreError`; whether that should stop the
run is the caller's decision, not the recorder's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tao.store.sqlite import Store
from tao.trace import RunResult, Step


class RunRecorder:
    """Writes one run's start, steps (each with its model call) and end to a :class:`Store`."""

    def __init__(self, store: Store, config: Mapping[str, Any] | None = None) -> None:
        """``config`` is stored as JSON with the run (tools, max_steps, limits, …)."""
        self.store = store
        self.config: dict[str, Any] = dict(config or {})

    def on_start(self, result: RunResult) -> None:
        self.store.begin_run(result, self.config)

    def on_step(self, result: RunResult, step: Step) -> None:
        self.store.add_step(result, step)

    def on_finish(self, result: RunResult) -> None:
        self.store.finish_run(result, self.config)
