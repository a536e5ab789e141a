"""The ReAct loop: Thought, Action, Observation, until an answer or the budget ends.

    agent = Agent(model="openai:gpt-4o-mini", tools=["calc"], max_steps=8)
    result = agent.run("What is 17 * 23 + 4?")
    result.status, result.answer, result.steps, result.usage

The whole idea is :meth:`Agent.run`; the hard parts live behind small names:
``parse_reply`` (protocol/text.py), ``act`` (act.py), ``Budget`` (budget.py).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tao.act import Executor, act, call_tool
from tao.budget import Budget
from tao.errors import TaoError
from tao.models import Model, load_model
from tao.models.base import Completion, Message
from tao.protocol import prompts
from tao.protocol.labels import Labels, get_labels
from tao.protocol.text import Action, FinalAnswer, cut_at_stop, parse_reply
from tao.tools.base import Tool, make_tool
from tao.trace import RunObserver, RunResult, Status, Step, StepKind

if TYPE_CHECKING:
    from tao.store import Store

ToolSpec = str | Tool | Callable[..., Any]


def finish(answer: str) -> str:
    """Finish the task with your answer."""
    return answer


def new_run_id() -> str:
    """Time-ordered and unique: ``tao runs list`` sorts by it, prefixes stay short."""
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_hex(6)}"


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
        grammar: bool = True,
        project: Path | str | None = None,
        corpus: Path | str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        executor: Executor | None = None,
        ask: Callable[[str], str] | None = None,
        record: bool | Store = True,
        system_prompt: str | None = None,
        numbered: bool = False,
        task_label: str | None = None,
    ) -> None:
        from tao.tools.registry import resolve_tools

        self.labels: Labels = get_labels(lang)
        self.model: Model = load_model(model, base_url=base_url, api_key=api_key)
        resolved = resolve_tools(
            tools,
            project=Path(project) if project else None,
            corpus=Path(corpus) if corpus else None,
            ask=ask,
        )
        self.tools: dict[str, Tool] = {t.name: t for t in resolved}
        self.tools["finish"] = make_tool(finish)
        self.budget = Budget(max_steps, max_seconds, max_tokens)
        self.temperature = temperature
        self.max_reply_tokens = max_reply_tokens
        self.grammar = grammar
        self.executor = executor or call_tool
        self.record = record
        self.numbered = numbered
        self.task_label = task_label
        self.system_prompt = system_prompt or prompts.system_prompt(
            self.labels, list(self.tools.values())
        )

    def run(self, task: str, *, observers: Sequence[RunObserver] = ()) -> RunResult:
        """Solve ``task``; returns a result whatever the model writes (SPEC L1, L4)."""
        result = RunResult(new_run_id(), task, self.model.name, Status.MAX_STEPS, None)
        result.lang, result.started_at = self.labels.code, time.time()
        watchers = [*self._recorders(), *observers]
        for watcher in watchers:
            watcher.on_start(result)
        messages: list[Message] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": prompts.task_message(self.labels, task, self.task_label)},
        ]
        started = time.monotonic()
        while (spent := self.budget.exhausted(len(result.steps), started, result.usage)) is None:
            step = self._step(len(result.steps) + 1, messages)
            result.steps.append(step)
            result.usage.add(step)
            for watcher in watchers:
                watcher.on_step(result, step)
            if step.kind is StepKind.FINAL:
                result.status, result.answer = Status.FINISHED, step.argument
                break
            if step.kind is StepKind.MODEL_ERROR:
                result.status, result.error = Status.ERROR, step.observation
                break
        else:
            result.stop_reason = spent
        result.duration_s = time.monotonic() - started
        for watcher in watchers:
            watcher.on_finish(result)
        return result

    def _step(self, index: int, messages: list[Message]) -> Step:
        """One model call and, if it asked for one, one tool call."""
        started = time.perf_counter()
        sent = [dict(m) for m in messages]
        try:
            reply = self._complete(sent, self._stops(index))
        except Exception as error:  # a backend failure ends the run with status error
            message = (
                str(error) if isinstance(error, TaoError) else f"{type(error).__name__}: {error}"
            )
            return Step(
                index,
                StepKind.MODEL_ERROR,
                None,
                None,
                None,
                message,
                sent,
                "",
                time.perf_counter() - started,
            )
        model_s = time.perf_counter() - started
        parsed = parse_reply(cut_at_stop(reply.text, self._stops(index)), self.labels)
        step = Step(
            index,
            StepKind.PARSE_ERROR,
            parsed.thought,
            None,
            None,
            None,
            sent,
            reply.text,
            0.0,
            reply.input_tokens,
            reply.output_tokens,
            reply.evaluated_tokens,
            model_s,
        )
        if isinstance(parsed, FinalAnswer):
            step.kind, step.tool, step.argument = StepKind.FINAL, "finish", parsed.answer
        elif isinstance(parsed, Action):
            outcome = act(parsed, self.tools, self.executor)
            step.kind, step.tool, step.argument = outcome.kind, outcome.tool, parsed.argument
            step.observation, step.arguments = outcome.observation, outcome.arguments
            step.tool_duration_s = outcome.duration_s
        else:
            step.observation = prompts.reminder(self.labels, parsed.reason)
        if step.kind is not StepKind.FINAL:
            messages.append({"role": "assistant", "content": parsed.text})
            messages.append(
                {
                    "role": "user",
                    "content": prompts.observation_message(
                        self.labels, step.observation or "", index if self.numbered else None
                    ),
                }
            )
        step.duration_s = time.perf_counter() - started
        return step

    def _stops(self, index: int) -> list[str]:
        """The Observation label ends the model's turn; numbered too in the paper's format."""
        numbered = [f"{self.labels.observation} {index}:"] if self.numbered else []
        return [*self.labels.stop, *numbered]

    def _complete(self, messages: list[Message], stops: list[str]) -> Completion:
        grammar = None
        if self.grammar and self.model.supports_grammar:
            from tao.protocol.grammar import react_grammar

            grammar = react_grammar(self.labels, list(self.tools))
        return self.model.complete(
            messages,
            stop=stops if self.model.supports_stop else (),
            temperature=self.temperature,
            max_tokens=self.max_reply_tokens,
            grammar=grammar,
        )

    def _recorders(self) -> list[RunObserver]:
        if self.record is False:
            return []
        from tao.store import RunRecorder, Store

        store = Store.open() if self.record is True else self.record
        return [RunRecorder(store)]
