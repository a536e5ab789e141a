"""The paper's strategies (SPEC P1, P2), each answering one question with :class:`tao.Agent`.

- ``standard``: the few-shot ``Question → Answer`` prompt, one reply.
- ``cot``: reasoning only (``Thought: … Answer: …``), one reply.
- ``cot-sc``: ``samples`` CoT replies at ``sc_temperature``, majority vote.
- ``act``: actions only (``Action N: Search[...]``) over the wiki tools.
- ``react``: thoughts and actions (the paper's numbered format) over the wiki tools.
- ``react-cot-sc``: ReAct; CoT-SC when ReAct has no answer within its steps.
- ``cot-sc-react``: CoT-SC; ReAct when the majority answer has fewer than samples/2 votes.

Every run of every strategy is an ordinary agent run, so it lands in the run log
(``tao runs show``) with its eval context as the run's config.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tao.eval.data import Benchmark, Question
from tao.eval.metrics import exact_match, f1_score, label_match, majority_vote, normalize_answer
from tao.eval.metrics import normalize_label as _label
from tao.eval.prompts import PromptKind, PromptSet
from tao.eval.record import QuestionRecord
from tao.loop import Agent
from tao.models import Model
from tao.models.base import Completion, Message
from tao.protocol.text import cut_at_stop
from tao.trace import RunResult, Status, StepKind

if TYPE_CHECKING:
    from tao.store import Store

STRATEGIES = ("standard", "cot", "cot-sc", "act", "react", "react-cot-sc", "cot-sc-react")
#: The paper's step limits (SPEC L5).
DEFAULT_STEPS: dict[str, int] = {"hotpotqa": 7, "fever": 5}
DEFAULT_SAMPLES = 21
#: Bumped when the prompts or the reading of answers change: old results files are not resumed.
EVAL_FORMAT = 3
_SINGLE: dict[str, PromptKind] = {
    "standard": "standard",
    "cot": "cot",
    "act": "act",
    "react": "react",
}
DEFAULT_SC_TEMPERATURE = 0.7


@dataclass(frozen=True)
class EvalSettings:
    """Everything that decides an eval's answers; picklable, so Ray workers get it whole."""

    benchmark: Benchmark
    strategy: str
    model: str
    corpus: str
    prompts: str
    questions: str = ""
    base_url: str | None = None
    max_steps: int = 7
    samples: int = DEFAULT_SAMPLES
    sc_temperature: float = DEFAULT_SC_TEMPERATURE
    grammar: bool = True
    max_seconds: float = 1800.0
    max_reply_tokens: int = 256

    def key(self) -> dict[str, Any]:
        """What identifies the results (the file they resume from): not limits of the run."""
        return {
            "benchmark": self.benchmark,
            "strategy": self.strategy,
            "model": self.model,
            "base_url": self.base_url,
            "corpus": self.corpus,
            "prompts": self.prompts,
            "format": EVAL_FORMAT,
            "questions": self.questions,
            "max_steps": self.max_steps,
            "samples": self.samples,
            "sc_temperature": self.sc_temperature,
            "grammar": self.grammar,
            "max_reply_tokens": self.max_reply_tokens,
        }


class StopAtNextExample:
    """A model that also stops where the few-shot prompt would begin its next example.

    The paper's prompts are runs of ``Question: … Answer: …`` examples; without
    this a model may write the next ``Question:`` itself. The stop is sent to
    backends that accept ``stop`` and cut client-side for the rest (SPEC L3).
    """

    supports_tools = False  # the paper's prompts are the text protocol

    def __init__(self, model: Model, stops: Sequence[str]) -> None:
        self.inner = model
        self.stops = list(stops)
        self.name = model.name
        self.supports_stop = model.supports_stop
        self.supports_grammar = model.supports_grammar

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        stop = [*kwargs.pop("stop", ()), *self.stops]
        if self.inner.supports_stop:
            kwargs["stop"] = stop
        kwargs.pop("tools", None)
        reply = self.inner.complete(messages, **kwargs)
        text = cut_at_stop(reply.text, stop)
        return reply if text == reply.text else replace(reply, text=text)


@dataclass
class Outcome:
    """One question's record, plus its runs when nobody recorded them yet (Ray workers)."""

    record: QuestionRecord
    runs: list[tuple[RunResult, dict[str, Any]]] = field(default_factory=list)


def answer_question(
    settings: EvalSettings,
    model: Model,
    prompts: PromptSet,
    question: Question,
    store: Store | None,
) -> Outcome:
    """Answer and score one question; ``store`` records its runs live, else they are returned.

    Thread-safe as long as ``model`` is: each call builds its own agents and wiki tools.
    """
    return _QuestionRun(settings, model, prompts, question, store).answer()


class _QuestionRun:
    """One question under one strategy: the agent runs it made, in order."""

    def __init__(
        self,
        settings: EvalSettings,
        model: Model,
        prompts: PromptSet,
        question: Question,
        store: Store | None,
    ) -> None:
        self.settings = settings
        self.model = model
        self.prompts = prompts
        self.store = store
        self._question = question
        self._pending: list[tuple[RunResult, dict[str, Any]]] = []

    def answer(self) -> Outcome:
        started = time.monotonic()
        question, runs = self._question, self._pending
        strategy = self.settings.strategy
        fallback: str | None = None
        votes: int | None = None
        if strategy in _SINGLE:
            answer = self._once(_SINGLE[strategy], temperature=0.0, role=strategy)
        elif strategy == "cot-sc":
            answer, votes = self._cot_sc()
        elif strategy == "react-cot-sc":
            answer = self._once("react", temperature=0.0, role="react")
            if answer is None and not self._errored():
                (answer, votes), fallback = self._cot_sc(), "cot-sc"
        elif strategy == "cot-sc-react":
            answer, votes = self._cot_sc()
            if votes < self.settings.samples / 2 and not self._errored():
                answer, fallback = self._once("react", temperature=0.0, role="react"), "react"
        else:
            raise ValueError(f"unknown strategy {strategy!r}; choose one of: {STRATEGIES}")
        record = self._record(question, answer, runs, time.monotonic() - started)
        record.fallback, record.votes = fallback, votes
        if votes is not None:
            record.samples = self.settings.samples
        return Outcome(record, [] if self.store is not None else runs)

    def _errored(self) -> bool:
        return any(run.status is Status.ERROR for run, _ in self._pending)

    def _cot_sc(self) -> tuple[str | None, int]:
        """``samples`` CoT runs at the sampling temperature; the majority answer and its votes."""
        answers: list[str | None] = []
        for sample in range(self.settings.samples):
            answers.append(
                self._once(
                    "cot",
                    temperature=self.settings.sc_temperature,
                    role=f"cot-sc sample {sample + 1}/{self.settings.samples}",
                )
            )
            if self._errored():
                break
        key = normalize_answer if self.settings.benchmark == "hotpotqa" else _label
        return majority_vote(answers, key)

    def _once(self, kind: PromptKind, *, temperature: float, role: str) -> str | None:
        """One agent run of prompt ``kind``; returns its cleaned answer or ``None``."""
        settings, question = self.settings, self._question
        acting = kind in ("act", "react")
        agent = Agent(
            StopAtNextExample(self.model, [f"\n{self.prompts.task_label}:"]),
            ["wiki"] if acting else [],
            corpus=settings.corpus if acting else None,
            max_steps=settings.max_steps if acting else 1,
            max_seconds=settings.max_seconds,
            max_tokens=10_000_000,
            temperature=temperature,
            protocol="text",
            max_reply_tokens=settings.max_reply_tokens,
            grammar=settings.grammar and kind == "react",
            record=False,
            system_prompt=self.prompts.system(kind),
            numbered=acting,
            task_label=self.prompts.task_label,
            fence_untrusted=False,  # the paper's exact observation format; a local corpus
        )
        config = {
            "eval": {
                "benchmark": settings.benchmark,
                "strategy": settings.strategy,
                "role": role,
                "question_index": question.index,
                "question_id": question.id,
                "gold": question.gold,
            }
        }
        observers = []
        if self.store is not None:
            from tao.store import RunRecorder

            observers.append(RunRecorder(self.store, config))
        result = agent.run(question.question, observers=observers)
        self._pending.append((result, config))
        if result.status is Status.FINISHED:
            return clean_answer(result.answer)
        if kind == "standard" and result.steps and result.steps[-1].kind is StepKind.PARSE_ERROR:
            # Standard prompting asks for the bare answer; a chat model often drops the
            # "Answer:" label the paper's completion model wrote. Still counted as a parse error.
            return clean_answer(result.steps[-1].model_output)
        return None

    def _record(
        self,
        question: Question,
        answer: str | None,
        runs: list[tuple[RunResult, dict[str, Any]]],
        seconds: float,
    ) -> QuestionRecord:
        settings = self.settings
        if settings.benchmark == "fever":
            em = f1 = label_match(answer, question.gold)
        else:
            em, f1 = exact_match(answer, question.gold), f1_score(answer, question.gold)
        results = [run for run, _ in runs]
        error = next((run.error for run in results if run.status is Status.ERROR), None)
        record = QuestionRecord(
            index=question.index,
            id=question.id,
            question=question.question,
            gold=question.gold,
            answer=answer,
            em=em,
            f1=f1,
            strategy=settings.strategy,
            benchmark=settings.benchmark,
            model=settings.model,
            status="error" if error else ("finished" if answer is not None else "no_answer"),
            steps=sum(len(run.steps) for run in results),
            model_calls=sum(run.usage.model_calls for run in results),
            input_tokens=sum(run.usage.input_tokens for run in results),
            output_tokens=sum(run.usage.output_tokens for run in results),
            seconds=round(seconds, 3),
            parse_failures=sum(
                1 for run in results for step in run.steps if step.kind is StepKind.PARSE_ERROR
            ),
            run_ids=[run.run_id for run in results],
            error=error,
        )
        record.tokens = record.input_tokens + record.output_tokens
        return record


def clean_answer(answer: str | None) -> str | None:
    """The first non-empty line of an answer (a model may run on past it); ``None`` if empty."""
    if answer is None:
        return None
    for line in answer.splitlines():
        if line.strip():
            return line.strip()
    return None
