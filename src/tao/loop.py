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
import queue
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tao.act import Approver, Executor, Outcome, Ready, call_tool, execute, needs_approval, refuse
from tao.budget import Budget
from tao.episode import ModelFailure, ModelRequest, Settings, ToolRequest, episode
from tao.errors import TaoError
from tao.events import ActionEvent, ApprovalEvent, Event, FinalEvent, ObservationEvent, TextDelta
from tao.models import Model, load_model
from tao.models.base import Completion
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
    ) -> None:
        from tao.tools.registry import resolve_tools

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
            system_prompt=system_prompt or prompts.system_prompt(labels, list(self.tools.values())),
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
        self.record = record

    @property
    def labels(self) -> Any:
        return self.settings.labels

    @property
    def system_prompt(self) -> str:
        return self.settings.system_prompt

    # -- the two drivers: same loop, threads or asyncio ---------------------------------

    def run(self, task: str, *, observers: Sequence[RunObserver] = ()) -> RunResult:
        """Solve ``task``; returns a result whatever the model writes (SPEC L1, L4)."""
        return self._drive(task, observers, _ignore)

    async def arun(self, task: str, *, observers: Sequence[RunObserver] = ()) -> RunResult:
        """The awaitable twin of :meth:`run`: ``result = await agent.arun(task)``."""
        return await self._adrive(task, observers, _ignore)

    def stream(self, task: str, *, observers: Sequence[RunObserver] = ()) -> Iterator[Event]:
        """Yield typed events (text as it arrives, actions, observations), the result last."""
        events: queue.Queue[Event | BaseException] = queue.Queue()

        def work() -> None:
            try:
                self._drive(task, observers, events.put)
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

        runner = asyncio.ensure_future(self._adrive(task, observers, emit))
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

    def _drive(self, task: str, observers: Sequence[RunObserver], emit: Emit) -> RunResult:
        result, watchers = self._begin(task, observers)
        loop = episode(self.settings, result, self._on_step(result, watchers, emit))
        answer: Any = None
        try:
            while True:
                request = loop.send(answer)
                if isinstance(request, ModelRequest):
                    answer = self._ask(request, emit)
                else:
                    answer = self._act(request, emit)
        except StopIteration:
            pass
        return self._end(result, watchers, emit)

    async def _adrive(self, task: str, observers: Sequence[RunObserver], emit: Emit) -> RunResult:
        result, watchers = self._begin(task, observers)
        loop = episode(self.settings, result, self._on_step(result, watchers, emit))
        answer: Any = None
        try:
            while True:
                request = loop.send(answer)
                if isinstance(request, ModelRequest):
                    answer = await self._aask(request, emit)
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

    def _decide(self, ready: Ready, step: int, emit: Emit) -> Ready | Outcome:
        """Side effects need a person's yes for this exact call (SPEC S3)."""
        emit(ActionEvent(step, ready.tool.name, ready.arguments, ready.call.argument))
        if not needs_approval(ready):
            return ready
        emit(ApprovalEvent(step, ready.tool.name, ready.arguments))
        decision = self.approve(ready.tool, ready.arguments) if self.approve else None
        return ready if decision is True else refuse(ready, decision)

    def _act(self, request: ToolRequest, emit: Emit) -> list[Outcome]:
        decided = [self._decide(r, request.step, emit) for r in request.calls]
        runnable = [d for d in decided if isinstance(d, Ready)]
        if len(runnable) > 1 and self.executor is call_tool:
            with ThreadPoolExecutor(min(len(runnable), MAX_PARALLEL_CALLS)) as pool:
                done = list(pool.map(lambda r: execute(r, self.executor), runnable))
        else:
            done = [execute(r, self.executor) for r in runnable]
        return _merge(decided, done)

    async def _aact(self, request: ToolRequest, emit: Emit) -> list[Outcome]:
        decided = [
            await asyncio.to_thread(self._decide, r, request.step, emit) for r in request.calls
        ]
        runnable = [d for d in decided if isinstance(d, Ready)]
        limit = asyncio.Semaphore(MAX_PARALLEL_CALLS if self.executor is call_tool else 1)

        async def one(ready: Ready) -> Outcome:
            async with limit:
                return await asyncio.to_thread(execute, ready, self.executor)

        return _merge(decided, list(await asyncio.gather(*(one(r) for r in runnable))))

    # -- bookkeeping ---------------------------------------------------------------------

    def _begin(
        self, task: str, observers: Sequence[RunObserver]
    ) -> tuple[RunResult, list[RunObserver]]:
        result = RunResult(new_run_id(), task, self.model.name, Status.MAX_STEPS, None)
        result.lang, result.started_at = self.settings.labels.code, time.time()
        watchers = [*self._recorders(), *observers]
        for watcher in watchers:
            watcher.on_start(result)
        return result, watchers

    def _on_step(
        self, result: RunResult, watchers: list[RunObserver], emit: Emit
    ) -> Callable[[Step], None]:
        def on_step(step: Step) -> None:
            for watcher in watchers:
                watcher.on_step(result, step)
            emit(ObservationEvent(step))

        return on_step

    def _end(self, result: RunResult, watchers: list[RunObserver], emit: Emit) -> RunResult:
        result.duration_s = time.time() - result.started_at
        for watcher in watchers:
            watcher.on_finish(result)
        emit(FinalEvent(result))
        return result

    def _recorders(self) -> list[RunObserver]:
        if self.record is False:
            return []
        from tao.store import RunRecorder, Store

        store = Store.open() if self.record is True else self.record
        config = {
            "tools": [name for name in self.tools if name != "finish"],
            "protocol": self.settings.protocol,
            "max_steps": self.settings.budget.max_steps,
            "max_seconds": self.settings.budget.max_seconds,
            "max_tokens": self.settings.budget.max_tokens,
            "temperature": self.temperature,
            "grammar": self.settings.grammar is not None,
        }
        return [RunRecorder(store, config)]


def _merge(decided: Sequence[Ready | Outcome], done: Sequence[Outcome]) -> list[Outcome]:
    """Outcomes in the model's order: refusals where they were, results for the rest."""
    results = iter(done)
    return [d if isinstance(d, Outcome) else next(results) for d in decided]


def _describe(error: Exception) -> str:
    return str(error) if isinstance(error, TaoError) else f"{type(error).__name__}: {error}"
