"""What both of the agent's drivers do for the loop: record, checkpoint, approve, prepare calls.

:mod:`tao.agent` drives the loop with threads (``run``) or asyncio (``arun``); only
the calls that can block (the model, the tools, a person at a terminal) differ
between the two, so everything else is written once here.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tao.errors import FatalError, InternalError
from tao.events import (
    ActionEvent,
    AnswerEvent,
    ApprovalEvent,
    CompactionEvent,
    Event,
    FinalEvent,
    ObservationEvent,
    TextDelta,
)
from tao.run.act import Approver, Executor, Person, call_tool, execute
from tao.run.context import CallContext, Remaining, calling
from tao.run.exchange import (
    Answer,
    ApprovalAnswer,
    AskApproval,
    AskModel,
    Ending,
    RunTools,
    SaveCheckpoint,
    StepsDone,
)
from tao.run.output import typed
from tao.run.setup import Start
from tao.sandbox.children import kill_all
from tao.state.calls import Outcome, Ready
from tao.state.config import Approval, Checkpoint, ChildCall, Decision, PendingCall
from tao.state.result import RunObserver, RunResult, Status, StepKind
from tao.tools.limits import disarm

if TYPE_CHECKING:
    from tao.approval.policy import Policy
    from tao.models.base import Model, ModelRequest
    from tao.run.exchange import LoopSetup
    from tao.run.loop import Loop
    from tao.store.base import Store
    from tao.store.writer import ProgressWriter
    from tao.telemetry import RunTracing, Telemetry

Emit = Callable[[Event], None]
#: What the loop asks for that may take time: a model, a person, tools.
Blocking = AskModel | AskApproval | RunTools
#: Parallel tool calls of one reply run at most this many at a time.
MAX_PARALLEL_CALLS = 8


def ignore(event: Event) -> None:
    """The emit of a run nobody streams."""


@dataclass(frozen=True, kw_only=True)
class RunParts:
    """What one run needs of the agent that starts it, handed down to the driver.

    The driver sees these parts, never the :class:`tao.Agent`: the engine sits below the
    public face and imports nothing from it (layers only go down).
    """

    setup: LoopSetup
    """The tools, prompt and labels the loop runs with."""
    model: Model
    """The backend each step asks."""
    store: Store | None
    """The run log the run is recorded in; ``None``: not recorded (``record=False``)."""
    telemetry: Telemetry | None
    """Where the run's spans go; ``None``: nowhere, at no cost."""
    policy: Policy
    """Rules a person wrote that pre-approve calls (SPEC S3)."""
    approve: Approver | Person | None
    """Who decides on a call with side effects when no rule allows it."""
    executor: Executor
    """Runs one validated call (the tool itself, or a person with ``--human-tools``)."""
    output_type: object
    """What ``result.output`` is made as; only used when the config has an output schema."""
    memory: dict[str, Checkpoint]
    """The agent's checkpoints of runs with no run log, so they can be followed up or resumed."""


class Driver:
    """What both drivers do for the loop that cannot block: record, checkpoint, approve."""

    def __init__(self, parts: RunParts, observers: Sequence[RunObserver], emit: Emit) -> None:
        self.parts = parts
        self.emit = emit
        #: Set by :meth:`stop`: the status the run ends with at its next step.
        self.stopping: Status | None = None
        self.result: RunResult | None = None
        self.closed = False
        self._closing = threading.Lock()
        #: The tool calls running now (a child run in one is stopped with this run).
        self._calls: set[CallContext] = set()
        #: With no run log, where the run stood last: a checkpoint, or the turn to make it from.
        self.last: Checkpoint | StepsDone | None = None
        self.observers = list(observers)
        self.store = parts.store
        #: The run, its steps and checkpoints on their way to the run log (group commit).
        self.writer: ProgressWriter | None = None
        if self.store is not None:
            from tao.store.writer import ProgressWriter

            self.writer = ProgressWriter(self.store, parts.setup.config)
            self.observers.insert(0, self.writer)
        #: The run's spans (``parts.telemetry``); ``None``, and no cost, when nobody collects them.
        self.tracing: RunTracing | None = None
        self.model = parts.model
        if parts.telemetry is not None:
            self.tracing = parts.telemetry.start()
            self.model = self.tracing.model(parts.model)
            self.observers.insert(0, self.tracing)  # first: a failing run log still ends them

    def open(self, start: Start) -> RunResult:
        self.result = start.result
        if self.writer is not None:  # one process at a time acts for the run (SPEC R5)
            from tao.store.heartbeat import RunLease

            self.writer.lease = start.lease or RunLease(self.writer.store, start.result.run_id)
        if self.observers:
            with self._partial(start.result):
                for observer in self.observers:
                    observer.on_start(start.result)
                if self.writer is not None and start.checkpoint is not None:
                    # resumed: running again now; a new run's row goes with its first
                    # checkpoint, the loop's first request
                    self.writer.flush()
        return start.result

    def note(self, request: SaveCheckpoint | StepsDone, result: RunResult) -> None:
        try:  # what _partial does, without a context manager's cost on every step
            self._note(request, result)
        except FatalError as error:
            self._failed(error, result)
            raise

    def _note(self, request: SaveCheckpoint | StepsDone, result: RunResult) -> None:
        if isinstance(request, StepsDone):
            if self.writer is not None:
                self.writer.steps(request.steps)
            for step in request.steps:
                result.add_step(step, request.usage)
                for observer in self.observers:
                    if observer is not self.writer:  # it was handed them above
                        observer.on_step(result, step)
                if self.emit is not ignore:  # no event is built for a run nobody streams
                    final = step.kind is StepKind.FINAL
                    self.emit(AnswerEvent(step) if final else ObservationEvent(step))
        if isinstance(request, SaveCheckpoint):
            if self.writer is not None:
                self.writer.checkpoint(request.checkpoint)
            else:
                self.last = request.checkpoint
        elif request.transcript is not None:  # made only if written or wanted at the end
            if self.writer is not None:
                self.writer.later(request.checkpoint)
            else:
                self.last = request

    def flush(self, result: RunResult, *, now: bool = True) -> None:
        """Write the steps and checkpoint still held, ``now`` or (before a model or tool
        call) soon, while it runs: nothing waits past a person or the run's end."""
        if self.writer is None:
            return
        try:  # what _partial does, without a context manager's cost on every step
            if now:
                self.writer.flush()
            else:
                self.writer.soon()
        except FatalError as error:
            self._failed(error, result)
            raise

    def advance(self, loop: Loop, answer: Answer, result: RunResult) -> Blocking | Ending:
        """Send ``answer``; record and checkpoint on the way (those never wait); return the
        next request that may block (model, person, tools), or how the run ended."""
        while True:
            if self.stopping is not None:
                loop.close()
                return Ending(self.stopping)
            try:
                request = loop.send(answer)
            except StopIteration as stop:  # the writer's on_finish writes what it holds
                ending: Ending = stop.value
                return ending
            if not isinstance(request, (StepsDone, SaveCheckpoint)):  # a tuple: faster than |
                if self.tracing is not None:
                    self.tracing.turn(request.step)
                if self.writer is not None:
                    self.flush(result, now=isinstance(request, AskApproval))
                return request
            self.note(request, result)
            answer = None

    def let_go(self) -> None:
        """The driver is done: a lease its run's end did not release (the run log failed,
        the process is leaving) is given up now, not left to run out."""
        if self.writer is not None and self.writer.lease is not None:
            self.writer.lease.release()

    def stop(self, status: Status) -> None:
        """Stop the run from outside (Ctrl-C, SIGTERM, ``cancel()``), from any thread.

        Its children are killed now; it is recorded as ``status`` now, from its last
        checkpoint, even while the driver is still blocked in a model call; the driver
        ends at its next step.
        """
        self.stopping = status
        with self._closing:
            calls = list(self._calls)
        for call in calls:  # a child run a call started stops with its parent
            call.stop(status)
        kill_all()
        if self.result is not None:
            self.close(self.result, Ending(status))

    def close(self, result: RunResult, ending: Ending) -> RunResult:
        with self._closing:
            if self.closed:
                return result
            self.closed = True
        disarm()  # the tool-call timer the run's calls shared
        result.status, result.answer = ending.status, ending.answer
        result.error, result.stop_reason = ending.error, ending.stop_reason
        result.pending = list(ending.pending) if ending.pending else None
        if ending.answer is not None and self.parts.setup.output is not None:
            result.output = typed(self.parts.output_type, ending.answer)
        result.duration_s = time.time() - result.started_at
        if self.writer is None:  # no run log: kept for a follow-up or resume in this process
            last = self.last.checkpoint() if isinstance(self.last, StepsDone) else self.last
            if last is not None:  # while the caller keeps the result: follow() and reopen()
                memory = self.parts.memory  # take the result, not the id, of such a run
                memory[result.run_id] = last
                weakref.finalize(result, memory.pop, result.run_id, None)
        if self.observers:
            with self._partial(result):
                for observer in self.observers:
                    observer.on_finish(result)
        if self.emit is not ignore:
            self.emit(FinalEvent(result))
        return result

    def approve(self, request: AskApproval) -> ApprovalAnswer:
        """Side effects need a yes for this exact call: a policy rule or a person (SPEC S3).

        ``None`` means nobody can decide now (no terminal): the run pauses, and the
        person who decides later is shown the preview (a diff). A call that was running
        when its process stopped is never pre-approved by a policy rule (SPEC R1).
        """
        parts, decisions, previews = self.parts, [], []
        records: list[Approval | None] = []
        for ready, pending in zip(request.calls, request.pending, strict=True):
            decision: Decision | None = None
            preview = _preview(ready)
            rule = None if pending.interrupted else parts.policy.allows(ready.tool, ready.arguments)
            if rule is not None:
                decision = True
                where = str(parts.policy.source) if parts.policy.source else "policy"
                globs = " ".join(f"{k}={v}" for k, v in rule.arguments.items())
                records.append(Approval(approved=True, by=where, via="policy", at=time.time(),
                                        reason=f"rule: {rule.tool} {globs}".strip()))  # fmt: skip
            else:
                self.emit(ApprovalEvent(request.step, ready.tool.name, ready.arguments, pending))
                decision = _ask(parts.approve, ready, pending)
                records.append(_record(parts.approve, decision))
            decisions.append(decision)
            previews.append(preview)
        return ApprovalAnswer(tuple(decisions), tuple(previews), tuple(records))

    def announce(self, request: RunTools) -> None:
        if self.emit is ignore:
            return
        for ready in request.calls:
            self.emit(ActionEvent(request.step, ready.tool.name, ready.arguments))

    def model_request(self, request: AskModel) -> ModelRequest:
        """What the model is sent for ``request``: keyed by the run, so a provider's prompt
        cache groups the run's steps (each one's prompt is the one before, extended). The
        compactions made for it are streamed first, as they happen."""
        if self.emit is not ignore:
            for record in request.compactions:
                self.emit(CompactionEvent(record))
        if self.result is None:
            return request.request
        return dataclasses.replace(request.request, cache_key=self.result.run_id)

    def on_text(self, step: int) -> Callable[[str], None] | None:
        if self.emit is ignore:
            return None
        emit = self.emit
        return lambda text: emit(TextDelta(step, text))

    def jobs(self, request: RunTools) -> list[Callable[[], Outcome]]:
        """One call each: confirmed unchanged since its approval, bounded by the run's time."""
        jobs: list[Callable[[], Outcome]] = [
            functools.partial(self.execute, request, i) for i in range(len(request.calls))
        ]
        return (
            jobs if self.tracing is None else self.tracing.tools(request.step, request.calls, jobs)
        )

    def execute(self, request: RunTools, i: int) -> Outcome:
        """Run call ``i`` of ``request`` with the run's executor; the call can see which run
        and step it belongs to (:mod:`tao.run.context`), and a child run it starts is
        recorded with its step."""
        ready, shown = request.calls[i], request.approved_previews[i]
        if self.result is None:
            return execute(ready, self.parts.executor, timeout_s=request.timeout_s)
        context = CallContext(
            self.result.run_id,
            request.step,
            ready.tool.name,
            self._left(),
            position=request.positions[i] if request.positions else i,
            approve=self.parts.approve,
            resume=request.children[i] if request.children else None,
        )
        with self._closing:
            self._calls.add(context)
        try:
            with calling(context):
                outcome = execute(
                    ready, self.parts.executor, timeout_s=request.timeout_s, approved_preview=shown
                )
        finally:
            with self._closing:
                self._calls.discard(context)
        if context.child is None:
            return outcome
        return dataclasses.replace(outcome, child=context.child, waiting=_waiting(context))

    def _left(self) -> Remaining:
        """What the run may still spend: a child run started by a call gets no more."""
        if self.result is None:
            raise InternalError("a child run asked for the budget before its parent started")
        config, usage = self.parts.setup.config, self.result.usage
        cost = None
        if config.max_cost_usd is not None:
            cost = max(config.max_cost_usd - (usage.cost_usd or 0.0), 0.0)
        return Remaining(
            tokens=max(config.max_tokens - usage.input_tokens - usage.output_tokens, 0),
            seconds=max(config.max_seconds - (time.time() - self.result.started_at), 0.0),
            cost_usd=cost,
        )

    def parallel(self, request: RunTools) -> int:
        """How many calls of one reply may run at once (a custom executor: one at a time)."""
        custom = self.parts.executor is not call_tool
        return 1 if custom else min(len(request.calls), MAX_PARALLEL_CALLS)

    @contextmanager
    def _partial(self, result: RunResult) -> Iterator[None]:
        """A fatal error while recording (the run log failed) carries the run so far, and
        ends the run's spans."""
        try:
            yield
        except FatalError as error:
            self._failed(error, result)
            raise

    def _failed(self, error: FatalError, result: RunResult) -> None:
        if error.partial is None:
            error.partial = result
        if self.tracing is not None:
            self.tracing.abandon(error)


def _waiting(context: CallContext) -> tuple[PendingCall, ...]:
    """The paused child's calls as this run's pending calls: the same call (tool, arguments,
    digest: a decision stays bound to it, SPEC S7), filed under the parent's call that
    started the child, and naming the child run that holds it."""
    child = context.child
    if child is None or not context.waiting:
        return ()
    return tuple(
        dataclasses.replace(
            call,
            step=context.step,
            position=context.position,
            child=ChildCall(child.run_id, context.tool, call.id),
        )
        for call in context.waiting
    )


def _ask(approver: Approver | Person | None, ready: Ready, call: PendingCall) -> Decision | None:
    """A person may decide on any call; an approver that may be a rule is not asked whether
    to run again a call that may already have taken effect (SPEC R1): that run pauses."""
    if isinstance(approver, Person):
        return approver.ask(ready.tool, ready.arguments, call)
    if approver is None or call.interrupted:
        return None
    return approver(ready.tool, ready.arguments)


def _record(approver: Approver | Person | None, decision: Decision | None) -> Approval | None:
    """Who took ``decision`` (issue 30): a person as they name themselves, else this OS user
    through Python code."""
    if decision is None:
        return None
    if isinstance(approver, Person):
        return Approval.taken(decision, approver.via, approver.by)
    return Approval.taken(decision, "python")


def _preview(ready: Ready) -> str | None:
    """What a person should see before deciding (a diff); never breaks the pause."""
    if ready.tool.preview is None:
        return None
    try:
        return ready.tool.preview(ready.arguments)
    except Exception as error:
        return f"(no preview: {error})"
