"""The agent: a model, tools and one :class:`~tao.state.RunConfig`, driving the loop of ``loop.py``.

    agent = Agent("openai:gpt-4o-mini", ["calc"], max_steps=8)
    result = agent.run("What is 17 * 23 + 4?")          # or: await agent.arun(...)
    result.status, result.answer, result.steps, result.usage

    for event in agent.stream("What is 17 * 23 + 4?"):  # or: async for ... in agent.astream(...)
        print(event)

The loop (:func:`tao.loop.react`) is one pure generator; the two drivers here
only answer what it asks, ``run`` with threads and ``arun`` with asyncio. What
they share (recording, checkpoints, approvals) is written once in
:class:`_Driver`; only the three calls that can block differ.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING

from tao.act import Approver, Executor, Outcome, Ready, call_tool, execute
from tao.errors import FatalError
from tao.events import ActionEvent, ApprovalEvent, Event, FinalEvent, ObservationEvent, TextDelta
from tao.exchange import (
    Answer,
    ApprovalAnswer,
    AskApproval,
    AskModel,
    Ending,
    ModelAnswer,
    ModelFailure,
    RunTools,
    SaveCheckpoint,
    StepDone,
)
from tao.loop import Loop
from tao.models import Model
from tao.models.base import ModelReply
from tao.policy import Policy
from tao.protocol.labels import Labels
from tao.runs import Start, begin, build_setup, describe_error, reopen
from tao.state import Checkpoint, Decision, RunConfig
from tao.tools.base import Tool
from tao.trace import RunObserver, RunResult

if TYPE_CHECKING:
    from tao.store import Store

ToolSpec = str | Tool | Callable[..., object]
Emit = Callable[[Event], None]
#: What the loop asks for that may take time: a model, a person, tools.
Blocking = AskModel | AskApproval | RunTools
#: Parallel tool calls of one reply run at most this many at a time.
MAX_PARALLEL_CALLS = 8


def _ignore(event: Event) -> None:
    pass


class Agent:
    """A model, a set of tools and a :class:`RunConfig`; :meth:`run` solves one task with them.

    Settings go in ``config`` or as keywords of the same names (``max_steps=5``);
    live objects (an approver, an executor, a store, a policy) go beside them.
    """

    def __init__(
        self,
        model: str | Model | None = None,
        tools: Sequence[ToolSpec] | None = None,
        *,
        config: RunConfig | None = None,
        approve: Approver | None = None,
        ask: Callable[[str], str] | None = None,
        executor: Executor | None = None,
        record: bool | Store = True,
        policy: Policy | None = None,
        api_key: str | None = None,
        **settings: object,
    ) -> None:
        built = build_setup(model, tools, config, settings, ask=ask, api_key=api_key)
        #: Every setting of this agent's runs; recorded with each run, rebuilt by ``tao resume``.
        self.config: RunConfig = built.config
        self.model: Model = built.model
        self.tools: dict[str, Tool] = built.setup.tools
        self.setup = built.setup
        self.executor: Executor = executor or call_tool
        self.approve = approve
        self.policy = policy if policy is not None else Policy.default()
        self.record = record
        self._store: Store | None = record if not isinstance(record, bool) else None
        #: Checkpoints of runs not recorded in a store, so they can still be resumed here.
        self._memory: dict[str, Checkpoint] = {}

    @property
    def labels(self) -> Labels:
        return self.setup.labels

    @property
    def system_prompt(self) -> str:
        return self.setup.system_prompt

    # -- the public API: run, stream, resume; sync and async ------------------------------

    def run(self, task: str, *, observers: Sequence[RunObserver] = ()) -> RunResult:
        """Solve ``task``; returns a result whatever the model writes (SPEC L1, L4)."""
        return _SyncDriver(self, observers, _ignore).drive(self._begin(task))

    async def arun(self, task: str, *, observers: Sequence[RunObserver] = ()) -> RunResult:
        """``run`` without blocking the event loop: ``result = await agent.arun(task)``."""
        return await _AsyncDriver(self, observers, _ignore).drive(self._begin(task))

    def resume(
        self,
        run: str | RunResult,
        *,
        approve: Decision | None = None,
        observers: Sequence[RunObserver] = (),
    ) -> RunResult:
        """Continue a paused or interrupted run from exactly where it stopped (SPEC S3, M3).

            result = agent.run("clean up old logs")        # status: awaiting_approval
            result = agent.resume(result, approve=True)    # or approve="not those files"

        ``approve`` decides every waiting call (``True``, ``False`` or a reason);
        without it, decisions recorded by ``tao runs approve/deny`` apply, and a
        call still undecided asks :attr:`approve` or pauses again.
        """
        return _SyncDriver(self, observers, _ignore).drive(self._reopen(run, approve))

    def stream(self, task: str, *, observers: Sequence[RunObserver] = ()) -> Iterator[Event]:
        """Yield typed events (text as it arrives, actions, observations), the result last."""
        return self._stream(self._begin(task), observers)

    def stream_resume(
        self, run: str | RunResult, *, observers: Sequence[RunObserver] = ()
    ) -> Iterator[Event]:
        """:meth:`resume`, as events (the CLI's ``tao resume`` shows them live)."""
        return self._stream(self._reopen(run, None), observers)

    async def astream(
        self, task: str, *, observers: Sequence[RunObserver] = ()
    ) -> AsyncIterator[Event]:
        """:meth:`stream` for asyncio: ``async for event in agent.astream(task)``."""
        events: asyncio.Queue[Event] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def emit(event: Event) -> None:
            loop.call_soon_threadsafe(events.put_nowait, event)

        driver = _AsyncDriver(self, observers, emit)
        runner = asyncio.ensure_future(driver.drive(self._begin(task)))
        while True:
            getter = asyncio.ensure_future(events.get())
            await asyncio.wait({getter, runner}, return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():
                getter.cancel()
                runner.result()  # the run failed before its final event: raise it here
                continue
            event = getter.result()
            yield event
            if isinstance(event, FinalEvent):
                return

    def _stream(self, start: Start, observers: Sequence[RunObserver]) -> Iterator[Event]:
        events: queue.Queue[Event | BaseException] = queue.Queue()

        def work() -> None:
            try:
                _SyncDriver(self, observers, events.put).drive(start)
            except BaseException as error:  # handed to the consumer, raised there
                events.put(error)

        threading.Thread(target=work, name="tao-stream", daemon=True).start()
        while True:
            event = events.get()
            if isinstance(event, BaseException):
                raise event
            yield event
            if isinstance(event, FinalEvent):
                return

    # -- bookkeeping ------------------------------------------------------------------------

    def _begin(self, task: str) -> Start:
        return begin(task, self.model.name, self.config)

    def _reopen(self, run: str | RunResult, approve: Decision | None) -> Start:
        start = reopen(run, approve, self.run_log(), self._memory)
        advance = getattr(self.model, "advance_to", None)
        if callable(advance):  # a scripted model continues where the run left it
            checkpoint = start.checkpoint
            advance(start.result.usage.model_calls + (1 if checkpoint and checkpoint.reply else 0))
        return start

    def run_log(self) -> Store | None:
        """The store this agent records into, opened on first use; ``None`` with record=False."""
        if self.record is False:
            return None
        if self._store is None:
            from tao.store import Store

            self._store = Store.open()
        return self._store


class _Driver:
    """What both drivers do for the loop that cannot block: record, checkpoint, approve."""

    def __init__(self, agent: Agent, observers: Sequence[RunObserver], emit: Emit) -> None:
        self.agent = agent
        self.emit = emit
        self.observers = list(observers)
        self.store = agent.run_log()
        if self.store is not None:
            from tao.store import RunRecorder

            self.observers.insert(0, RunRecorder(self.store, agent.config))

    def open(self, start: Start) -> RunResult:
        with _partial(start.result):
            for observer in self.observers:
                observer.on_start(start.result)
        return start.result

    def note(self, request: SaveCheckpoint | StepDone, result: RunResult) -> None:
        with _partial(result):
            self._note(request, result)

    def _note(self, request: SaveCheckpoint | StepDone, result: RunResult) -> None:
        if isinstance(request, StepDone):
            result.add_step(request.step)
            for observer in self.observers:
                observer.on_step(result, request.step)
            self.emit(ObservationEvent(request.step))
        elif self.store is not None:
            self.store.save_state(result.run_id, request.checkpoint)
        else:
            self.agent._memory[result.run_id] = request.checkpoint

    def advance(self, loop: Loop, answer: Answer, result: RunResult) -> Blocking | Ending:
        """Send ``answer``; record and checkpoint on the way (those never wait); return the
        next request that may block (model, person, tools), or how the run ended."""
        while True:
            try:
                request = loop.send(answer)
            except StopIteration as stop:
                ending: Ending = stop.value
                return ending
            if not isinstance(request, SaveCheckpoint | StepDone):
                return request
            self.note(request, result)
            answer = None

    def close(self, result: RunResult, ending: Ending) -> RunResult:
        result.status, result.answer = ending.status, ending.answer
        result.error, result.stop_reason = ending.error, ending.stop_reason
        result.pending = list(ending.pending) if ending.pending else None
        result.duration_s = time.time() - result.started_at
        with _partial(result):
            for observer in self.observers:
                observer.on_finish(result)
        self.emit(FinalEvent(result))
        return result

    def approve(self, request: AskApproval) -> ApprovalAnswer:
        """Side effects need a yes for this exact call: a policy rule or a person (SPEC S3).

        ``None`` means nobody can decide now (no terminal): the run pauses, and the
        person who decides later is shown the preview (a diff).
        """
        agent, decisions, previews = self.agent, [], []
        for ready, pending in zip(request.calls, request.pending, strict=True):
            decision: Decision | None = None
            if agent.policy.allows(ready.tool.name, ready.arguments):
                decision = True
            else:
                self.emit(ApprovalEvent(request.step, ready.tool.name, ready.arguments, pending))
                if agent.approve is not None:
                    decision = agent.approve(ready.tool, ready.arguments)
            decisions.append(decision)
            previews.append(_preview(ready) if decision is None else None)
        return ApprovalAnswer(tuple(decisions), tuple(previews))

    def announce(self, request: RunTools) -> None:
        for ready in request.calls:
            call = ready.call
            self.emit(ActionEvent(request.step, ready.tool.name, ready.arguments, call.argument))

    def on_text(self, step: int) -> Callable[[str], None] | None:
        if self.emit is _ignore:
            return None
        emit = self.emit
        return lambda text: emit(TextDelta(step, text))

    def parallel(self, request: RunTools) -> int:
        """How many calls of one reply may run at once (a custom executor: one at a time)."""
        custom = self.agent.executor is not call_tool
        return 1 if custom else min(len(request.calls), MAX_PARALLEL_CALLS)


class _SyncDriver(_Driver):
    def drive(self, start: Start) -> RunResult:
        result, loop = self.open(start), start.loop(self.agent.setup)
        request = self.advance(loop, None, result)
        while not isinstance(request, Ending):
            if isinstance(request, AskModel):
                answer: Answer = self.ask(request)
            elif isinstance(request, AskApproval):
                answer = self.approve(request)
            else:
                answer = self.act(request)
            request = self.advance(loop, answer, result)
        return self.close(result, request)

    def ask(self, request: AskModel) -> ModelAnswer | ModelFailure:
        started = time.perf_counter()
        try:
            reply = self.agent.model.complete(request.request, self.on_text(request.step))
        except Exception as error:  # a backend failure ends the run with status error
            return ModelFailure(describe_error(error), time.perf_counter() - started)
        return ModelAnswer(reply, time.perf_counter() - started)

    def act(self, request: RunTools) -> list[Outcome]:
        self.announce(request)
        executor, workers = self.agent.executor, self.parallel(request)
        if workers == 1:
            return [execute(ready, executor) for ready in request.calls]
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda ready: execute(ready, executor), request.calls))


class _AsyncDriver(_Driver):
    async def drive(self, start: Start) -> RunResult:
        result, loop = self.open(start), start.loop(self.agent.setup)
        request = self.advance(loop, None, result)
        while not isinstance(request, Ending):
            if isinstance(request, AskModel):
                answer: Answer = await self.ask(request)
            elif isinstance(request, AskApproval):
                answer = await asyncio.to_thread(self.approve, request)
            else:
                answer = await self.act(request)
            request = self.advance(loop, answer, result)
        return self.close(result, request)

    async def ask(self, request: AskModel) -> ModelAnswer | ModelFailure:
        started, model = time.perf_counter(), self.agent.model
        on_text = self.on_text(request.step)
        try:
            acomplete = getattr(model, "acomplete", None)
            if acomplete is None:  # a hand-written model with only ``complete``
                reply = await asyncio.to_thread(model.complete, request.request, on_text)
            else:
                reply = await acomplete(request.request, on_text)
        except Exception as error:
            return ModelFailure(describe_error(error), time.perf_counter() - started)
        assert isinstance(reply, ModelReply)
        return ModelAnswer(reply, time.perf_counter() - started)

    async def act(self, request: RunTools) -> list[Outcome]:
        self.announce(request)
        executor, limit = self.agent.executor, asyncio.Semaphore(self.parallel(request))

        async def one(ready: Ready) -> Outcome:
            async with limit:
                return await asyncio.to_thread(execute, ready, executor)

        return list(await asyncio.gather(*(one(ready) for ready in request.calls)))


@contextmanager
def _partial(result: RunResult) -> Iterator[None]:
    """A fatal error while recording (the run log failed) carries the run so far."""
    try:
        yield
    except FatalError as error:
        if error.partial is None:
            error.partial = result
        raise


def _preview(ready: Ready) -> str | None:
    """What a person should see before deciding (a diff); never breaks the pause."""
    if ready.tool.preview is None:
        return None
    try:
        return ready.tool.preview(ready.arguments)
    except Exception as error:
        return f"(no preview: {error})"
