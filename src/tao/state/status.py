"""The words of a run's state: how it stands (:class:`Status`), what a step was (:class:`StepKind`).

A leaf, so that whatever only names a status (the rendering in :mod:`tao.format`, the run
log's queries, the calls of :mod:`tao.state.calls`) need not load the run's data classes;
:mod:`tao.state.result` re-exports both.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """How a run stands or ended; running out of budget is a status, never an exception."""

    RUNNING = "running"
    """Still going (or its process died: the run log shows that as ``interrupted``)."""
    FINISHED = "finished"
    """The model gave its final answer."""
    MAX_STEPS = "max_steps"
    """A budget ran out (SPEC L1, L5); ``stop_reason`` names which: steps, time, tokens, cost."""
    AWAITING_APPROVAL = "awaiting_approval"
    """A call with side effects waits for a person; ``pending`` lists it (SPEC S3)."""
    ERROR = "error"
    """The backend failed; ``error`` says how."""
    INTERRUPTED = "interrupted"
    """Stopped from outside (Ctrl-C, SIGTERM, a killed process) before it ended; resumable."""
    CANCELLED = "cancelled"
    """Cancelled by the code that ran it; the partial trace is kept."""
    QUEUED = "queued"
    """Submitted to a queue of workers (``tao submit``); no worker has started it yet."""

    @property
    def resumable(self) -> bool:
        """Whether ``tao resume`` can continue a run in this state."""
        return self in (
            Status.QUEUED,
            Status.RUNNING,
            Status.AWAITING_APPROVAL,
            Status.INTERRUPTED,
        )


class StepKind(StrEnum):
    """What the model's reply turned out to be, so traces can be filtered."""

    ACTION = "action"  # a tool ran (or refused) and produced an observation
    FINAL = "final"  # finish[...] or a final-answer line
    PARSE_ERROR = "parse_error"  # no action could be read; a format reminder went back
    UNKNOWN_TOOL = "unknown_tool"
    MODEL_ERROR = "model_error"  # the backend failed; the run ends with status error
