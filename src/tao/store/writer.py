"""A run's steps and checkpoints on their way to the run log: group commit (SPEC R1, R3).

One transaction per step costs more than the rest of a step (``bench/overhead.py``), so
steps are not written one by one. A :class:`ProgressWriter` holds a run's finished steps
and the checkpoint after them, and writes them in one transaction:

- at once, when the run asks a person, is about to run a call with side effects (the
  journal), stores its first checkpoint, or ends: nothing waits past those;
- together with the run's row: a new run's row is written with its first checkpoint, and
  its end (status, answer, usage) with its last steps and checkpoint, so a run takes two
  transactions besides its steps, and the log never holds a run without a checkpoint;
- otherwise at most :data:`WRITE_WITHIN_S` after they finished, from a thread of its own,
  even while the run is blocked in a long model or tool call.

A model slower than that (every real one) thus has each step stored while it thinks
about the next. A process killed in between loses at most that long of read-only work,
which resumes from the checkpoint before it and is asked again.

    writer = ProgressWriter(store, config)
    writer.on_start(result)                            # held, written with the next
    writer.steps(steps); writer.checkpoint(checkpoint)  # held
    writer.soon()                                      # written within WRITE_WITHIN_S
    writer.flush()                                     # written now
    writer.on_finish(result)                           # the rest, and the run's end

It is the run log's :class:`tao.state.result.RunObserver` for the agent's own run log (the
driver hands it steps itself, so ``on_step`` does nothing);
:class:`tao.store.RunRecorder` is the one to attach to any other run.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from collections.abc import Callable, Iterable

from tao.state.config import Checkpoint, RunConfig
from tao.state.result import RunResult, Step
from tao.store.base import Store
from tao.store.heartbeat import RunLease

#: How long a finished step may wait for its write.
WRITE_WITHIN_S = 0.05


class ProgressWriter:
    """What one run has not yet written, and the lock around writing it."""

    def __init__(
        self, store: Store, config: RunConfig | None = None, lease: RunLease | None = None
    ) -> None:
        """``config`` is recorded with the run, for resume and eval; ``None``: not known.
        ``lease``: the run's lease (SPEC R5), taken with the run's first write unless taken
        already, checked by every write, released with the run's end."""
        self.store, self.config, self.lease = store, config, lease
        self.result: RunResult | None = None
        #: The run's row is still to be written (as running), with the next write.
        self._begin = False
        self._steps: list[Step] = []
        self._checkpoint: Checkpoint | None = None
        #: Makes the checkpoint held when it is not made yet (between steps: see ``later``).
        self._later: Callable[[], Checkpoint | None] | None = None
        #: Held while the held state changes or is written: by the run, and by the timer.
        self._lock = threading.Lock()
        self._scheduled = False
        #: Why the last background write failed; raised in the run's own thread.
        self._error: BaseException | None = None
        #: Whether anything (the run's first checkpoint) was written yet.
        self.started = False

    def on_start(self, result: RunResult) -> None:
        """Hold the run's row (``running``): it goes with the first checkpoint, which a new
        run writes before anything else (a resumed one :meth:`flush` es it at once)."""
        with self._lock:
            self.result, self._begin = result, True

    def on_step(self, result: RunResult, step: Step) -> None:
        """Nothing: the driver hands the writer each turn's steps (:meth:`steps`)."""

    def on_finish(self, result: RunResult) -> None:
        """The run's end, with the steps and checkpoint still held, in one transaction."""
        with self._lock:
            steps, checkpoint = self._steps, self._held()
            self._steps, self._checkpoint, self._later = [], None, None
            lease = self.lease
            self.store.finish_run(
                result,
                self.config,
                checkpoint=checkpoint,
                steps=steps,
                begun=self.started,
                lease=lease.terms if lease is not None else None,
            )
            if lease is not None:
                lease.ended()

    def steps(self, steps: Iterable[Step]) -> None:
        with self._lock:
            self._steps.extend(steps)

    def checkpoint(self, checkpoint: Checkpoint) -> None:
        """Hold ``checkpoint`` (it replaces an older one held); the first one, and any taken
        inside a step (a pause, the journal of a side effect), are written now."""
        with self._lock:
            self._checkpoint, self._later = checkpoint, None
            if checkpoint.step is not None or not self.started:
                self._write()

    def later(self, make: Callable[[], Checkpoint | None]) -> None:
        """Hold the checkpoint between two steps, made only when written: a fast run
        replaces it many times before then."""
        with self._lock:
            self._checkpoint, self._later = None, make

    def soon(self) -> None:
        """See that what is held is written within :data:`WRITE_WITHIN_S`; raises what a
        background write hit, so a run whose log fails stops at its next step."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if not self._scheduled and self._holds():
            self._scheduled = True
            _TIMER.add(self)

    def flush(self) -> None:
        """Write what is held, now."""
        with self._lock:
            self._write()

    def _due(self) -> None:
        """The timer's write; a failure is kept for the run's thread (see :meth:`soon`)."""
        with self._lock:
            self._scheduled = False
            try:
                self._write()
            except Exception as error:  # held state kept: the next write retries it
                self._error = error

    def _write(self) -> None:
        """Called with the lock held."""
        if self.result is None or not (self._begin or self._holds()):
            return
        steps, checkpoint, lease = self._steps, self._held(), self.lease
        self.store.save_progress(
            self.result,
            steps,
            checkpoint,
            begin=self._begin,
            config=self.config,
            lease=lease.terms if lease is not None else None,
        )
        if lease is not None and self._begin:
            lease.taken()  # the row is written with it: renewed from now on
        self._steps, self._begin, self.started = [], False, True
        self._checkpoint = self._later = None

    def _holds(self) -> bool:
        """Whether steps or a checkpoint (made or not) wait for a write."""
        return bool(self._steps or self._checkpoint or self._later)

    def _held(self) -> Checkpoint | None:
        """The checkpoint held, made now if it was held as a turn (with the lock held)."""
        if self._checkpoint is None and self._later is not None:
            self._checkpoint, self._later = self._later(), None  # made once, if the write fails
        return self._checkpoint


class _Timer:
    """One daemon thread per process that writes each scheduled run's progress when due.

    Every delay is the same, so due times come in the order they were asked for: a deque
    is the whole schedule, and the thread sleeps until its head is due without watching
    for more. It is woken only from an empty schedule: waking a thread costs more than a
    step, and back-to-back runs would do it for each. Started on first use, and again in
    a forked child (whose copy of the schedule is the parent's, and dropped).
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A fresh schedule; in a forked child, the parent's thread, lock and runs are not
        this process's."""
        self._due: collections.deque[tuple[float, ProgressWriter]] = collections.deque()
        self._ready = threading.Condition(threading.Lock())
        self._idle = False
        self._started = False

    def add(self, writer: ProgressWriter) -> None:
        with self._ready:
            if not self._started:
                self._started = True
                threading.Thread(target=self._serve, name="tao-log-writer", daemon=True).start()
            self._due.append((time.monotonic() + WRITE_WITHIN_S, writer))
            if self._idle:
                self._ready.notify()

    def _serve(self) -> None:
        while True:
            with self._ready:
                while not self._due:
                    self._idle = True
                    self._ready.wait()
                self._idle = False
                due, writer = self._due[0]
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # later entries are due later still
                continue
            with self._ready:
                self._due.popleft()
            writer._due()


_TIMER = _Timer()
os.register_at_fork(after_in_child=_TIMER.reset)
