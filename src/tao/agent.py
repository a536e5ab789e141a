"""The agent: a model, tools and one :class:`~tao.state.config.RunConfig`, driving the
loop of :mod:`tao.run.loop`.

    agent = Agent("openai:gpt-4o-mini", ["calc"], max_steps=8)
    result = agent.run("What is 17 * 23 + 4?")          # or: await agent.arun(...)
    result.status, result.answer, result.steps, result.usage

    for event in agent.stream("What is 17 * 23 + 4?"):  # or: async for ... in agent.astream(...)
        print(event)

The loop (:func:`tao.run.loop.react`) is one pure generator; the two drivers here
only answer what it asks, ``run`` with threads and ``arun`` with asyncio. What
they share (recording, checkpoints, approvals) is written once in
:class:`Driver`; only the three calls that can block differ.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from tao.approval.policy import Policy
from tao.errors import ConfigError, ToolError, describe_error
from tao.events import Event, FinalEvent
from tao.models import Model
from tao.models.base import ModelReply
from tao.protocol.labels import Labels
from tao.run.act import Approver, Executor, Person, aexecute, call_tool
from tao.run.context import CallContext, Remaining, current
from tao.run.driver import Driver, RunParts, ignore
from tao.run.exchange import (
    Answer,
    AskApproval,
    AskModel,
    Ending,
    LoopSetup,
    ModelAnswer,
    ModelFailure,
    RunTools,
)
from tao.run.loop import Loop, react
from tao.run.setup import Models, Start, begin, build_setup, follow, reopen
from tao.state.budget import ChildRun
from tao.state.calls import Outcome, Ready
from tao.state.config import Checkpoint, Decision, RunConfig, Settings
from tao.state.result import RunObserver, RunResult, Status
from tao.telemetry import Telemetry, from_environment
from tao.tools.base import Tool

if TYPE_CHECKING:
    from tao.store import Store

ToolSpec = str | Tool | Callable[..., object]
Observers = Sequence[RunObserver]
#: The ended run a new one follows up (``history=``): its result, or its id in the run log.
History = RunResult | str | None


class Agent:
    """A model, a set of tools and a :class:`RunConfig`; :meth:`run` solves one task with them.

    Settings go in ``config`` or as keywords of the same names (``max_steps=5``), typed
    by :class:`~tao.state.config.Settings`: a misspelled one fails here, with the nearest
    name (:class:`~tao.errors.UnknownSettingError`). Live objects (an approver, an
    executor, a store, a policy) go beside them.
    """

    def __init__(
        self,
        model: Models | None = None,
        tools: Sequence[ToolSpec] | None = None,
        *,
        config: RunConfig | None = None,
        approve: Approver | Person | None = None,
        ask: Callable[[str], str] | None = None,
        executor: Executor | None = None,
        record: bool | Store = True,
        policy: Policy | None = None,
        api_key: str | None = None,
        **settings: Unpack[Settings],
    ) -> None:
        policy = policy if policy is not None else Policy.default()
        built = build_setup(model, tools, config, settings, ask=ask, api_key=api_key, policy=policy)
        #: Every setting of this agent's runs; recorded with each run, rebuilt by ``tao resume``.
        self.config: RunConfig = built.config
        self.model: Model = built.model
        self.tools: dict[str, Tool] = built.setup.tools
        self.setup = built.setup
        #: What ``result.output`` is made as (``output_type=``); ``None``: plain JSON.
        self.output_type = built.output_type
        self.executor: Executor = executor or call_tool
        self.approve = approve
        # A policy file inside the project is refused unless a person vouches for it
        # (the ``trust_project_policy`` setting, default ``$TAO_TRUST_PROJECT_POLICY``).
        projects = {Path(t.root) for t in self.tools.values() if t.root is not None}
        if self.config.project:
            projects.add(Path(self.config.project))
        self.policy = policy.outside(projects, trust=self.config.trust_project_policy)
        self.record = record
        self._store: Store | None = record if not isinstance(record, bool) else None
        #: Checkpoints of runs not recorded in a store, so they can still be resumed or followed
        #: up here; each is kept as long as its RunResult is (a long-lived agent keeps no more).
        self._memory: dict[str, Checkpoint] = {}
        #: Where runs send their spans (OpenTelemetry, when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is
        #: set or the program set a global TracerProvider); ``None``: nowhere, at no cost.
        self.telemetry: Telemetry | None = from_environment()

    @property
    def labels(self) -> Labels:
        return self.setup.labels

    @property
    def system_prompt(self) -> str:
        return self.setup.system_prompt

    # -- the public API: run, stream, resume; sync and async ------------------------------

    def run(self, task: str, *, observers: Observers = (), history: History = None) -> RunResult:
        """Solve ``task``; returns a result whatever the model writes (SPEC L1, L4).

        ``history`` (an ended run, or its id) makes this a follow-up: a new run whose
        model sees that run's whole conversation, then ``task``; it records its parent.

            first = agent.run("What is 17 * 23?")
            second = agent.run("And plus 4?", history=first)   # second.parent_id == first.run_id
        """
        return _SyncDriver(self._parts(), observers, ignore).drive(self._begin(task, history))

    async def arun(
        self, task: str, *, observers: Observers = (), history: History = None
    ) -> RunResult:
        """``run`` without blocking the event loop: ``result = await agent.arun(task)``."""
        driver = _AsyncDriver(self._parts(), observers, ignore)
        return await driver.drive(self._begin(task, history))

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
        return _SyncDriver(self._parts(), observers, ignore).drive(self._reopen(run, approve))

    def stream(
        self, task: str, *, observers: Observers = (), history: History = None
    ) -> Iterator[Event]:
        """Yield typed events (text as it arrives, actions, observations), the result last."""
        return self._stream(self._begin(task, history), observers)

    def stream_resume(
        self, run: str | RunResult, *, observers: Sequence[RunObserver] = ()
    ) -> Iterator[Event]:
        """:meth:`resume`, as events (the CLI's ``tao resume`` shows them live)."""
        return self._stream(self._reopen(run, None), observers)

    async def astream(
        self, task: str, *, observers: Observers = (), history: History = None
    ) -> AsyncIterator[Event]:
        """:meth:`stream` for asyncio: ``async for event in agent.astream(task)``."""
        events: asyncio.Queue[Event] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def emit(event: Event) -> None:
            loop.call_soon_threadsafe(events.put_nowait, event)

        driver = _AsyncDriver(self._parts(), observers, emit)
        runner = asyncio.ensure_future(driver.drive(self._begin(task, history)))
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

    def start(self, task: str, *, observers: Observers = (), history: History = None) -> RunHandle:
        """Start ``task`` in a thread; the handle can wait for it or ``cancel()`` it."""
        return RunHandle(_SyncDriver(self._parts(), observers, ignore), self._begin(task, history))

    def start_resume(self, run: str | RunResult, *, observers: Observers = ()) -> RunHandle:
        r""":meth:`resume` in a thread; a worker ``interrupt()``\ s it when told to stop."""
        return RunHandle(_SyncDriver(self._parts(), observers, ignore), self._reopen(run, None))

    def submit(self, task: str, *, queue: str | None = None) -> str:
        """Put ``task`` on a queue of workers (``tao worker``, or :class:`tao.workers.worker.
        Worker` in your own process, where your tools live); returns its run id, ``queued``.
        Needs ``pip install 'tao[workers]'`` and a run log (``TAO_DATABASE_URL`` for many
        machines)."""
        from tao.workers.queue import submit_run

        store = self.run_log()
        if store is None:
            raise ConfigError("a submitted run lives in the run log: use record=True")
        return submit_run(store, task, self.model.name, self.config, queue)

    def _stream(self, start: Start, observers: Sequence[RunObserver]) -> Iterator[Event]:
        events: queue.Queue[Event | BaseException] = queue.Queue()
        driver = _SyncDriver(self._parts(), observers, events.put)

        def work() -> None:
            try:
                driver.drive(start)
            except BaseException as error:  # handed to the consumer, raised there
                events.put(error)

        threading.Thread(target=work, name="tao-stream", daemon=True).start()
        while True:
            try:
                event = events.get()
            except KeyboardInterrupt:  # Ctrl-C reaches this thread, not the driver's
                driver.stop(Status.INTERRUPTED)
                raise
            if isinstance(event, BaseException):
                raise event
            yield event
            if isinstance(event, FinalEvent):
                return

    # -- composition: this agent as another agent's tool -------------------------------------

    def as_tool(self, name: str, description: str, *, config: RunConfig | None = None) -> Tool:
        """This agent as a tool of another: each call is a child run of its own.

            researcher = Agent("openai:gpt-5-mini", ["wiki"])
            lead = Agent("anthropic:claude-sonnet-5", [researcher.as_tool(
                "research", "Answer a factual question from Wikipedia.")])

        The child is recorded in the run log with the parent as its ``parent_id``, and the
        parent's step names it (``child_run``); its tokens and cost count in the parent's
        usage; it gets at most what is left of the parent's budget (tokens, time, money);
        cancelling or interrupting the parent stops it. ``config`` replaces this agent's
        settings for the child runs (a smaller ``max_steps``, say).
        """
        from tao.tools.base import make_tool

        child = self if config is None else self._with_config(config)

        def call(task: str) -> str:
            """Args:
            task: What to do, in full: the other agent sees nothing of this conversation.
            """
            return child._child_run(name, task)

        return make_tool(call, name=name, description=description, timeout_s=None)

    def _with_config(self, config: RunConfig) -> Agent:
        """This agent with other settings: the same model, tools, approver and run log."""
        tools = [tool for tool_name, tool in self.tools.items() if tool_name != "finish"]
        built = build_setup(self.model, tools, config, {}, policy=self.policy)
        child = copy.copy(self)
        child.config, child.setup, child.tools = built.config, built.setup, built.setup.tools
        return child

    def _child_run(self, tool: str, task: str) -> str:
        """One call of :meth:`as_tool`: a run under the call's parent, its answer returned.

        Under a run, the child is recorded with the parent's step and the call's place in
        it, so a parent resumed at that step continues the same child (paused, interrupted)
        or takes the answer it already gave, and no child runs twice (SPEC R1). A child that
        waits for a person nobody can ask inline pauses the parent on its calls (issue 31).
        """
        context = current()
        if context is None:  # called outside a run: a run of its own
            return _child_answer(
                tool, _SyncDriver(self._parts(), (), ignore).drive(self._begin(task))
            )
        parts = self._parts()
        capped = _within(parts.setup.config, context.remaining)
        parts = dataclasses.replace(parts, setup=dataclasses.replace(parts.setup, config=capped))
        if parts.approve is None:  # the parent's person decides the child's calls too
            parts = dataclasses.replace(parts, approve=context.approve)
        start = self._child_start(task, context, capped)
        if isinstance(start, RunResult):  # it had ended before the parent stopped
            result = start
        else:
            driver = _SyncDriver(parts, (), ignore)
            context.on_stop(driver.stop)
            result = driver.drive(start)
        usage = result.usage
        context.child = ChildRun(
            result.run_id, usage.input_tokens, usage.output_tokens, usage.cost_usd
        )
        if result.status is Status.AWAITING_APPROVAL and parts.store is not None:
            context.waiting = tuple(result.pending or ())  # the parent pauses on these
            return f"{tool} (run {result.run_id}) is waiting for a person"
        return _child_answer(tool, result)

    def _child_start(self, task: str, context: CallContext, config: RunConfig) -> Start | RunResult:
        """The child run of the parent's call in ``context``: the one it started before
        (continued with the decisions taken since, or as it ended), else a new one."""
        store = self.run_log()
        known = context.resume.run_id if context.resume is not None else None
        if known is None and store is not None:
            known = store.child_run(context.run_id, context.step, context.position)
        if known is None:
            start = self._begin(task)
            result = start.result
            result.parent_id, result.config = context.run_id, config
            result.parent_step, result.parent_position = context.step, context.position
            return start
        if store is not None and not store.get_summary(known).status.resumable:
            return store.get_run(known)
        start = self._reopen(known, None)
        checkpoint = start.checkpoint
        if context.resume is None or checkpoint is None:
            return start
        waiting = {call.id for call in checkpoint.pending}
        decided = {k: v for k, v in context.resume.decisions.items() if k in waiting}
        approvals = {k: v for k, v in context.resume.approvals.items() if k in decided}
        checkpoint = dataclasses.replace(
            checkpoint,
            decisions={**checkpoint.decisions, **decided},
            approvals={**checkpoint.approvals, **approvals},
        )
        return dataclasses.replace(start, checkpoint=checkpoint)

    # -- bookkeeping ------------------------------------------------------------------------

    def _begin(self, task: str, history: History = None) -> Start:
        if history is None:
            return begin(task, self.model.name, self.config)
        parent = follow(history, self.run_log(), self._memory)
        if parent.model == self.config.model:  # the same script goes on with the conversation
            self._advance(parent.model_calls)
        return begin(task, self.model.name, self.config, parent)

    def _reopen(self, run: str | RunResult, approve: Decision | None) -> Start:
        start = reopen(run, approve, self.run_log(), self._memory)
        checkpoint = start.checkpoint
        self._advance(
            start.result.usage.model_calls + (1 if checkpoint and checkpoint.reply else 0)
        )
        return start

    def _advance(self, calls: int) -> None:
        """A scripted model (``replay:``) continues where the runs before left it."""
        advance = getattr(self.model, "advance_to", None)
        if callable(advance):
            advance(calls)

    def _parts(self) -> RunParts:
        """What one run needs of this agent; the driver is handed these, never the agent."""
        return RunParts(
            setup=self.setup,
            model=self.model,
            store=self.run_log(),
            telemetry=self.telemetry,
            policy=self.policy,
            approve=self.approve,
            executor=self.executor,
            output_type=self.output_type,
            memory=self._memory,
        )

    def run_log(self) -> Store | None:
        """The store this agent records into, opened on first use; ``None`` with record=False.
        ``record`` set to a store after the agent was made (a worker lends its own) counts."""
        if self.record is False:
            return None
        if self._store is None and not isinstance(self.record, bool):
            self._store = self.record
        if self._store is None:
            from tao.store.factory import open_store

            self._store = open_store()
        return self._store


class RunHandle:
    """A run going on in a thread: wait for its result, or cancel it (SPEC R2).

    handle = agent.start("summarise the logs")
    handle.cancel()                      # status cancelled, partial trace kept
    result = handle.result(timeout=10)
    """

    def __init__(self, driver: _SyncDriver, start: Start) -> None:
        self.run_id = start.result.run_id
        self._driver = driver
        self._ended = threading.Event()
        self._outcome: RunResult | BaseException = start.result
        threading.Thread(target=self._work, args=(driver, start), daemon=True).start()

    def _work(self, driver: _SyncDriver, start: Start) -> None:
        try:
            outcome: RunResult | BaseException = driver.drive(start)
        except BaseException as error:  # raised in result(), where someone waits
            outcome = error
        if not self._ended.is_set():
            self._outcome = outcome
            self._ended.set()

    def cancel(self) -> None:
        """End the run as ``cancelled`` now: children killed, the partial trace kept.

        A tool call in flight is abandoned (its thread ends on its own); the result is
        ready at once."""
        self._stop(Status.CANCELLED)

    def interrupt(self) -> None:
        """End the run as ``interrupted`` now (resumable), as Ctrl-C would: a worker stopping."""
        self._stop(Status.INTERRUPTED)

    def _stop(self, status: Status) -> None:
        self._driver.stop(status)
        if self._driver.result is not None and self._driver.closed:
            self._outcome = self._driver.result
            self._ended.set()

    def result(self, timeout: float | None = None) -> RunResult:
        """The run's result, once it has ended (or :class:`TimeoutError`)."""
        if not self._ended.wait(timeout):
            raise TimeoutError(f"run {self.run_id} is still going")
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        return self._outcome


def _within(config: RunConfig, left: Remaining) -> RunConfig:
    """``config`` with no more budget than the parent has left."""
    cost = config.max_cost_usd
    if left.cost_usd is not None:
        cost = left.cost_usd if cost is None else min(cost, left.cost_usd)
    return config.replace(
        max_tokens=max(min(config.max_tokens, left.tokens), 1),
        max_seconds=max(min(config.max_seconds, left.seconds), 0.001),
        max_cost_usd=cost,
    )


def _child_answer(tool: str, result: RunResult) -> str:
    """What the parent's model reads: the child's answer, or why there is none."""
    if result.status is Status.FINISHED and result.answer is not None:
        return result.answer
    if result.status is Status.AWAITING_APPROVAL:  # only a run with no run log gets here
        calls = ", ".join(call.tool for call in result.pending or ())
        raise ToolError(
            f"{tool} (run {result.run_id}) is waiting for a person to approve {calls}, and "
            "with no run log it cannot pause this run: record runs to approve it"
        )
    why = result.error or result.stop_reason or str(result.status)
    raise ToolError(f"{tool} (run {result.run_id}) ended without an answer: {why}")


def resumed(start: Start, setup: LoopSetup) -> Loop:
    """The loop for ``start``, continuing from its checkpoint if it has one: built here, by
    the drivers, so that the run's setup and its loop sit side by side below them."""
    return react(
        setup,
        start.result.task,
        clock=time.monotonic,
        usage=start.result.usage,
        history=start.result.steps,
        resume=start.checkpoint,
        prior=start.prior,
    )


class _SyncDriver(Driver):
    def drive(self, start: Start) -> RunResult:
        try:
            return self._drive(start)
        except KeyboardInterrupt:  # Ctrl-C: recorded as interrupted, children ended (R2)
            self.stop(Status.INTERRUPTED)
            raise
        finally:
            self.let_go()

    def _drive(self, start: Start) -> RunResult:
        result, loop = self.open(start), resumed(start, self.parts.setup)
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
            on_text = None if self.emit is ignore else self.on_text(request.step)
            reply = self.model.complete(self.model_request(request), on_text)
        except Exception as error:  # a backend failure ends the run with status error
            return ModelFailure(describe_error(error), time.perf_counter() - started)
        return ModelAnswer(reply, time.perf_counter() - started)

    def act(self, request: RunTools) -> list[Outcome]:
        self.announce(request)
        if len(request.calls) == 1 and self.tracing is None:  # the usual reply: run it here
            return [self.execute(request, 0)]
        jobs = self.jobs(request)
        if len(jobs) == 1 or self.parallel(request) == 1:
            return [job() for job in jobs]
        with ThreadPoolExecutor(self.parallel(request)) as pool:
            return list(pool.map(lambda job: job(), jobs))


class _AsyncDriver(Driver):
    async def drive(self, start: Start) -> RunResult:
        try:
            return await self._drive(start)
        except asyncio.CancelledError:  # the task was cancelled: so is the run
            self.stop(Status.CANCELLED)
            raise
        except KeyboardInterrupt:
            self.stop(Status.INTERRUPTED)
            raise
        finally:
            self.let_go()

    async def _drive(self, start: Start) -> RunResult:
        result, loop = self.open(start), resumed(start, self.parts.setup)
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
        started, model = time.perf_counter(), self.model
        on_text, sent = self.on_text(request.step), self.model_request(request)
        try:
            acomplete = getattr(model, "acomplete", None)
            if acomplete is None:  # a hand-written model with only ``complete``
                reply = await asyncio.to_thread(model.complete, sent, on_text)
            else:
                reply = await acomplete(sent, on_text)
        except Exception as error:
            return ModelFailure(describe_error(error), time.perf_counter() - started)
        if not isinstance(reply, ModelReply):  # a hand-written model's mistake: a failed call
            kind = type(reply).__name__
            message = f"the model returned {kind}, not a ModelReply"
            return ModelFailure(message, time.perf_counter() - started)
        return ModelAnswer(reply, time.perf_counter() - started)

    async def act(self, request: RunTools) -> list[Outcome]:
        self.announce(request)
        limit = asyncio.Semaphore(self.parallel(request))
        native = self.parts.executor is call_tool  # an async def tool is awaited here

        async def one(ready: Ready, shown: str | None, job: Callable[[], Outcome]) -> Outcome:
            async with limit:
                if native and inspect.iscoroutinefunction(ready.tool.fn):
                    return await aexecute(
                        ready, timeout_s=request.timeout_s, approved_preview=shown
                    )
                return await asyncio.to_thread(job)

        calls = zip(request.calls, request.approved_previews, self.jobs(request), strict=True)
        return list(await asyncio.gather(*(one(*call) for call in calls)))
