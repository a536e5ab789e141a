"""Record a run into the run log while it happens (SPEC M3).

:class:`RunRecorder` is a :class:`tao.state.result.RunObserver`: the agent calls it at
the start, after every step and at the end. Each call is its own committed
transaction, so a run that is killed half-way keeps every step it finished,
and its row stays ``running`` (read as ``interrupted`` once its process is
gone) instead of vanishing.

    store = open_store()
    config = RunConfig(model="local", tools=("calc",))
    agent.run("What is 17 * 23 + 4?", observers=[RunRecorder(store, config)])

A failing write raises :class:`tao.errors.StoreError`; whether that should stop
the run is the caller's decision, not the recorder's.
"""

from __future__ import annotations

from tao.state.config import RunConfig
from tao.state.result import RunResult, Step
from tao.store.base import Store


class RunRecorder:
    """Writes one run's start, steps (each with its model call) and end to a :class:`Store`."""

    def __init__(self, store: Store, config: RunConfig | None = None) -> None:
        """``config`` is recorded with the run, for resume and eval; ``None``: not known."""
        self.store = store
        self.config = config

    def on_start(self, result: RunResult) -> None:
        self.store.begin_run(result, self.config)

    def on_step(self, result: RunResult, step: Step) -> None:
        self.store.add_step(result, step)

    def on_finish(self, result: RunResult) -> None:
        self.store.finish_run(result, self.config)
