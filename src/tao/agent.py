"""The agent: a model, tools and a budget, driving the ReAct loop of ``episode.py``.

    agent = Agent(model="openai:gpt-4o-mini", tools=["calc"], max_steps=8)
    result = agent.run("What is 17 * 23 + 4?")          # or: await agent.arun(...)
    result.status, result.answer, result.steps, result.usage

    for event in agent.stream("What is 17 * 23 + 4?"):  # or: async for ... in agent.astream(...)
        print(event)

The loop itself is one generator (``tao.episode.episode``); ``run`` and
``arun`` only fulfil what it asks for, the first with threads, the second
with asyncio. Parsing (protocol/), acting (act.py) and budgets (budget.py)
sit behind small names.
"""

from __future__ import annotations

import asyncio
import json
import queue
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tao.act import Approver, Executor, Outcome, Ready, call_tool, execute
from tao.budget import Budget
from tao.episode import (
    ApprovalRequest,
    Episode,
    ModelFailure,
    ModelRequest,
    Settings,
    ToolRequest,
    episode,
)
from tao.errors import TaoError
from tao.events import ActionEvent, ApprovalEvent, Event, FinalEvent, ObservationEvent, TextDelta
from tao.models import Model, load_model
from tao.models.base import Completion
from tao.policy import Policy
from tao.protocol import prompts
from tao.protocol.labels import get_labels
from tao.tools.base import Tool, make_tool
from tao.trace import RunObserver, RunResult, Status, Step

if TYPE_CHECKING:
    from tao.store import Store

ToolSpec = str | Tool | Callable[..., Any]
Emit = Callable[[Event], None]
#: Parallel tool calls of one reply run at most this many at a time.
MAX_PARALLEL_CALLS = 8


def finish(answer: str) -> str:
    """Finish the task with your answer."""
    return answer


def new_run_id() -> str:
    """Time-ordered and unique: ``tao runs list`` sorts by it."""
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_hex(6)}"


def _ignore(event: Event) -> None:
    pass


class Agent:
    """A model, a set of tools and a budget; :meth:`run` solves one task with them."""

    def __init__(
        self,
        model: str | Model = "local",
        tools: Sequence[ToolSpec] = (),
        *,
        lang: str = "en",
        max_steps: int = 8,
        max_seconds: float = 300.0,
        max_tokens: int = 100_000,
        temperature: float = 0.0,
        max_reply_tokens: int = 512,
        protocol: Literal["auto", "text", "native"] = "auto",
        grammar: bool = True,
        project: Path | str | None = None,
        corpus: Path | str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        executor: Executor | None = None,
        approve: Approver | None = None,
        ask: Callable[[str], str] | None = None,
        record: bool | Store = True,
        system_prompt: str | None = None,
        numbered: bool = False,
        task_label: str | None = None,
        fence_untrusted: bool = True,
        policy: Policy | None = None,
    ) -> None:
        from tao.tools.registry import resolve_tools

        #: How to build this agent again in another process (``tao resume``); JSON only.
        self.config: dict[str, Any] = {
            "model": model if isinstance(model, str) else None,
            "tools": [t if isinstance(t, str) else None for t in tools],
            "lang": lang,
            "max_steps": max_steps,
            "max_seconds": max_seconds,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "max_reply_tokens": max_reply_tokens,
            "protocol": protocol,
            "grammar": grammar,
            "project": str(Path(project).resolve()) if project else None,
            "corpus": str(Path(corpus).resolve()) if corpus else None,
            "base_url": base_url,
            "system_prompt": system_prompt,
            "numbered": numbered,
            "task_label": task_label,
            "fence_untrusted": fence_untrusted,
        }

        labels = get_labels(lang)
        self.model: Model = load_model(model, base_url=base_url, api_key=api_key)
        resolved = resolve_tools(
            tools,
            project=Path(project) if project else None,
            corpus=Path(corpus) if corpus else None,
            ask=ask,
        )
        self.tools: dict[str, Tool] = {t.name: t for t in resolved}
        self.tools["finish"] = make_tool(finish)
        if protocol == "auto":
            protocol = "native" if getattr(self.model, "supports_tools", False) else "text"
        elif protocol == "native" and not getattr(self.model, "supports_tools", False):
            raise TaoError(f"{self.model.name} does not support native tool calling; use text")
        grammar_text = None
        if grammar and protocol == "text" and self.model.supports_grammar:
            from tao.protocol.grammar import react_grammar

            grammar_text = react_grammar(labels, list(self.tools))
        self.settings = Settings(
            labels=labels,
            tools=self.tools,
            budget=Budget(max_steps, max_seconds, max_tokens),
            system_prompt=system_prompt
            or (
                prompts.native_system_prompt(labels)
                if protocol == "native"
                else prompts.system_prompt(labels, list(self.tools.values()))
            ),
            protocol=protocol,
            grammar=grammar_text,
            numbered=numbered,
            task_label=task_label,
            fence=fence_untrusted,
        )
        self.temperature = temperature
        self.max_reply_tokens = max_reply_tokens
        self.executor = executor or call_tool
        self.approve = approve
        self.policy = policy if policy is not None else Policy.default()
        self.record = record
        self._store: Store | None = record if not isinstance(record, bool) else None
        #: Checkpoints of runs not recorded in a store, so they can still be resumed here.
        self._states: dict[str, dict[str, Any]] = {}

    @property
    def labels(self) -> Any:
        return self.settings.labels

    @property
    def system_prompt(self) -> str:
        return self.settings.system_prompt

    # -- the two drivers: same loop, threads or asyncio ---------------------------------

    def run(self, task: str, *, observers: Sequence[RunObserver] = ()) -> RunResult:
        """Solve ``task``; returns a result whatever the model writes (SPEC L1, L4)."""
        return self._drive(self._begin(task), observers, _ignore)

    async def arun(self, task: str, *, observers: Sequence[RunObserver] = ()) -> RunResult:
        """The awaitable twin of :meth:`run`: ``result = await agent.arun(task)``."""
        return await self._adrive(self._begin(task), observers, _ignore)

    def resume(
        self,
        run: str | RunResult,
        *,
        approve: bool | str | None = None,
        observers: Sequence[RunObserver] = (),
    ) -> RunResult:
        """Continue a paused or interrupted run from exactly where it stopped (SPEC S3, M3).

            result = agent.run("clean up old logs")        # status: awaiting_approval
            result = agent.resume(result, approve=True)    # or approve="not those files"

        ``approve`` decides the waiting calls (``True``, ``False`` or a reason);
        without it, decisions recorded by ``tao runs approve/deny`` apply, and a
        call still undecided asks :attr:`approve` or pauses again.
        """
        return self._drive(self._reopen(run, approve), observers, _ignore)

    async def aresume(
        self,
        run: str | RunResult,
        *,
        approve: bool | str | None = None,
        observers: Sequence[RunObserver] = (),
    ) -> RunResult:
        """The awaitable twin of :meth:`resume`."""
        return await self._adrive(self._reopen(run, approve), observers, _ignore)

    def stream(self, task: str, *, observers: Sequence[RunObserver] = ()) -> Iterator[Event]:
        """Yield typed events (text as it arrives, actions, observations), the result last."""
        return self._stream(self._begin(task), observers)

    def stream_resume(
        self, run: str | RunResult, *, observers: Sequence[RunObserver] = ()
    ) -> Iterator[Event]:
        """:meth:`resume`, as events (the CLI's ``tao resume`` shows them live)."""
        return self._stream(self._reopen(run, None), observers)

    def _stream(self, start: Start, observers: Sequence[RunObserver]) -> Iterator[Event]:
        events: queue.Queue[Event | BaseException] = queue.Queue()

        def work() -> None:
            try:
                self._drive(start, observers, events.put)
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

    async def astream(
        self, task: str, *, observers: Sequence[RunObserver] = ()
    ) -> AsyncIterator[Event]:
        """The async twin of :meth:`stream`: ``async for event in agent.astream(task)``."""
        events: asyncio.Queue[Event] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def emit(event: Event) -> None:
            loop.call_soon_threadsafe(events.put_nowait, event)

        runner = asyncio.ensure_future(self._adrive(self._begin(task), observers, emit))
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

    def _drive(self, start: Start, observers: Sequence[RunObserver], emit: Emit) -> RunResult:
        result, watchers, loop = self._open(start, observers, emit)
        answer: Any = None
        try:
            while True:
                request = loop.send(answer)
                if isinstance(request, ModelRequest):
                    answer = self._ask(request, emit)
                elif isinstance(request, ApprovalRequest):
                    answer = self._approve(request, emit)
                else:
                    answer = self._act(request, emit)
        except StopIteration:
            pass
        return self._end(result, watchers, emit)

    async def _adrive(
        self, start: Start, observers: Sequence[RunObserver], emit: Emit
    ) -> RunResult:
        result, watchers, loop = self._open(start, observers, emit)
        answer: Any = None
        try:
            while True:
                request = loop.send(answer)
                if isinstance(request, ModelRequest):
                    answer = await self._aask(request, emit)
                elif isinstance(request, ApprovalRequest):
                    answer = await asyncio.to_thread(self._approve, request, emit)
                else:
                    answer = await self._aact(request, emit)
        except StopIteration:
            pass
        return self._end(result, watchers, emit)

    # -- what the drivers do for the loop ------------------------------------------------

    def _model_kwargs(self, request: ModelRequest, emit: Emit) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "stop": request.stop if self.model.supports_stop else (),
            "temperature": self.temperature,
            "max_tokens": self.max_reply_tokens,
            "grammar": request.grammar,
        }
        if request.tools is not None:
            kwargs["tools"] = request.tools
        if emit is not _ignore:
            kwargs["on_text"] = lambda text: emit(TextDelta(request.step, text))
        return kwargs

    def _ask(self, request: ModelRequest, emit: Emit) -> Completion | ModelFailure:
        started = time.perf_counter()
        try:
            return self.model.complete(request.messages, **self._model_kwargs(request, emit))
        except Exception as error:  # a backend failure ends the run with status error
            return ModelFailure(_describe(error), time.perf_counter() - started)

    async def _aask(self, request: ModelRequest, emit: Emit) -> Completion | ModelFailure:
        started = time.perf_counter()
        kwargs = self._model_kwargs(request, emit)
        try:
            acomplete = getattr(self.model, "acomplete", None)
            if acomplete is not None:
                reply: Completion = await acomplete(request.messages, **kwargs)
                return reply
            return await asyncio.to_thread(self.model.complete, request.messages, **kwargs)
        except Exception as error:
            return ModelFailure(_describe(error), time.perf_counter() - started)

    def _approve(self, request: ApprovalRequest, emit: Emit) -> list[bool | str | None]:
        """Side effects need a yes for this exact call: a policy rule or a person (SPEC S3).

        ``None`` means nobody can decide now (no terminal): the run pauses.
        """
        decisions: list[bool | str | None] = []
        for ready in request.calls:
            if self.policy.allows(ready.tool.name, ready.arguments):
                decisions.append(True)
                continue
            emit(ApprovalEvent(request.step, ready.tool.name, ready.arguments))
            decisions.append(self.approve(ready.tool, ready.arguments) if self.approve else None)
        return decisions

    def _act(self, request: ToolRequest, emit: Emit) -> list[Outcome]:
        for ready in request.calls:
            emit(ActionEvent(request.step, ready.tool.name, ready.arguments, ready.call.argument))
        if len(request.calls) > 1 and self.executor is call_tool:
            with ThreadPoolExecutor(min(len(request.calls), MAX_PARALLEL_CALLS)) as pool:
                return list(pool.map(lambda r: execute(r, self.executor), request.calls))
        return [execute(r, self.executor) for r in request.calls]

    async def _aact(self, request: ToolRequest, emit: Emit) -> list[Outcome]:
        for ready in request.calls:
            emit(ActionEvent(request.step, ready.tool.name, ready.arguments, ready.call.argument))
        limit = asyncio.Semaphore(MAX_PARALLEL_CALLS if self.executor is call_tool else 1)

        async def one(ready: Ready) -> Outcome:
            async with limit:
                return await asyncio.to_thread(execute, ready, self.executor)

        return list(await asyncio.gather(*(one(r) for r in request.calls)))

    # -- bookkeeping: starting, checkpointing, reopening runs ------------------------------

    def _begin(self, task: str) -> Start:
        result = RunResult(new_run_id(), task, self.model.name, Status.MAX_STEPS, None)
        result.lang, result.started_at = self.settings.labels.code, time.time()
        return Start(result, None)

    def _reopen(self, run: str | RunResult, approve: bool | str | None) -> Start:
        """Load a run and its last checkpoint; refuse runs that already ended."""
        run_id = run if isinstance(run, str) else run.run_id
        store = self._run_log()
        if store is not None:
            run_id = store.resolve(run_id)
            result, state = store.get_run(run_id), store.load_state(run_id)
            if store.get_summary(run_id).status in ("running", "interrupted"):
                result.status, result.error = Status.MAX_STEPS, None
        else:
            if isinstance(run, str) or run_id not in self._states:
                raise TaoError(
                    f"run {run_id} is not in this agent's memory; record runs to resume them"
                )
            result, state = run, self._states[run_id]
        if result.status not in (Status.AWAITING_APPROVAL, Status.MAX_STEPS) or state is None:
            raise TaoError(f"run {run_id} cannot be resumed: it ended with status {result.status}")
        if result.status is Status.MAX_STEPS and result.stop_reason:
            raise TaoError(f"run {run_id} cannot be resumed: {result.stop_reason}")
        if approve is not None:
            for call in state.get("pending") or []:
                state.setdefault("decisions", {})[str(call["position"])] = approve
        advance = getattr(self.model, "advance_to", None)
        if callable(advance):  # a scripted model continues where the run left it
            advance(result.usage.model_calls + (1 if state.get("reply") else 0))
        result.error, result.pending = None, None
        return Start(result, state)

    def _open(
        self, start: Start, observers: Sequence[RunObserver], emit: Emit
    ) -> tuple[RunResult, list[RunObserver], Episode]:
        result = start.result
        watchers = [*self._recorders(), *observers]
        for watcher in watchers:
            watcher.on_start(result)

        def on_step(step: Step) -> None:
            for watcher in watchers:
                watcher.on_step(result, step)
            emit(ObservationEvent(step))

        def checkpoint(state: dict[str, Any]) -> None:
            store = self._run_log()
            if store is not None:
                store.save_state(result.run_id, state)
            else:
                # The transcript only grows and no message is edited once appended, so a
                # copy of the list is a snapshot; a JSON round trip of the whole transcript
                # at every step was ~23 % of a step and quadratic over a run (issue 7).
                snapshot = {k: v for k, v in state.items() if k != "messages"}
                if not all(
                    v is None or isinstance(v, str | int | float) for v in snapshot.values()
                ):
                    snapshot = json.loads(json.dumps(snapshot))  # nested: copy deeply
                if "messages" in state:
                    snapshot["messages"] = list(state["messages"])
                self._states[result.run_id] = snapshot

        return result, watchers, episode(self.settings, result, on_step, checkpoint, start.state)

    def _end(self, result: RunResult, watchers: list[RunObserver], emit: Emit) -> RunResult:
        result.duration_s = time.time() - result.started_at
        for watcher in watchers:
            watcher.on_finish(result)
        emit(FinalEvent(result))
        return result

    def _run_log(self) -> Store | None:
        if self.record is False:
            return None
        if self._store is None:
            from tao.store import Store

            self._store = Store.open()
        return self._store

    def _recorders(self) -> list[RunObserver]:
        store = self._run_log()
        if store is None:
            return []
        from tao.store import RunRecorder

        return [RunRecorder(store, self.config)]


@dataclass(frozen=True)
class Start:
    """A run about to be driven: a fresh one, or one reopened from its checkpoint."""

    result: RunResult
    state: dict[str, Any] | None


def _describe(error: Exception) -> str:
    return str(error) if isinstance(error, TaoError) else f"{type(error).__name__}: {error}"
