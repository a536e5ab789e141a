"""The paper's strategies (SPEC P1, P2), each answering one question with :class:`tao.Agent`.

- ``standard``: the few-shot ``Question → Answer`` prompt, one reply.
- ``cot``: reasoning only (``Thought: … Answer: …``), one reply; on a backend with
  grammars, a reply without a readable answer (the embedded model often writes
  ``Answer:`` at the end of its thought line) is asked once more with the reply
  constrained to a thought line and an answer line, so the answer is not lost.
- ``cot-sc``: ``samples`` CoT replies at ``sc_temperature``, majority vote; each sample
  asked again the same way, so its vote is not lost.
- ``act``: actions only (``Action N: Search[...]``) over the wiki tools.
- ``react``: thoughts and actions (the paper's numbered format) over the wiki tools.
- ``react-cot-sc``: ReAct; CoT-SC when ReAct has no answer of its own within its steps
  (none, or one forced by the step budget or by repeats: the paper's ReAct ends such a
  trajectory with an empty ``finish[]``, which is what makes it back off).
- ``cot-sc-react``: CoT-SC; ReAct when the majority answer has fewer than samples/2 votes.

Every run of every strategy is an ordinary agent run, so it lands in the run log
(``tao runs show``) with its agent's :class:`tao.state.config.RunConfig` (derived from the
eval's by :meth:`EvalConfig.agent_config`); the results file links each question to
its runs by id.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tao.agent import Agent
from tao.errors import Cancelled, ConfigError
from tao.eval.config import STRATEGIES, EvalConfig
from tao.eval.data import Question
from tao.eval.metrics import exact_match, f1_score, label_match, majority_vote, normalize_answer
from tao.eval.metrics import normalize_label as _label
from tao.eval.prompts import PromptKind, PromptSet
from tao.eval.record import QuestionRecord, RecordStatus, recorded_question, total_cost
from tao.models.base import Model, ModelReply, ModelRequest, OnText
from tao.protocol.text import cut_at_stop
from tao.redact import redact
from tao.redact.structured import redact_optional
from tao.state.config import EvalTag, RunConfig
from tao.state.result import RunObserver, RunResult, Status, StepKind

if TYPE_CHECKING:
    from tao.store import Store

#: The strategies that are one run of one prompt (CoT is one run, asked again if unreadable).
_SINGLE: dict[str, PromptKind] = {
    "standard": "standard",
    "act": "act",
    "react": "react",
}
#: Run statuses that end a question; any other (interrupted, cancelled…) leaves it unrecorded.
_ENDED = frozenset({Status.FINISHED, Status.MAX_STEPS, Status.ERROR})


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

    def _request(self, request: ModelRequest) -> tuple[ModelRequest, list[str]]:
        """The request to send (our stops added, no tools) and every stop to cut at."""
        stop = [*request.stop, *self.stops]
        sent = stop if self.inner.supports_stop else []
        return dataclasses.replace(request, stop=sent, tools=None), stop

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        sent, stop = self._request(request)
        return _cut(self.inner.complete(sent, on_text), stop)

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        sent, stop = self._request(request)
        return _cut(await self.inner.acomplete(sent, on_text), stop)


def _cut(reply: ModelReply, stop: Sequence[str]) -> ModelReply:
    text = cut_at_stop(reply.text, stop)
    return reply if text == reply.text else dataclasses.replace(reply, text=text)


@dataclass
class Outcome:
    """One question's record, plus its runs when nobody recorded them yet (Ray workers)."""

    record: QuestionRecord
    runs: list[tuple[RunResult, RunConfig]] = field(default_factory=list)


def answer_question(
    config: EvalConfig,
    model: Model,
    prompts: PromptSet,
    question: Question,
    store: Store | None,
    observers: Sequence[RunObserver] = (),
) -> Outcome:
    """Answer and score one question; ``store`` records its runs live, else they are returned.

    Thread-safe as long as ``model`` (and each of ``observers``, which watch every run) is:
    each call builds its own agents and wiki tools.
    """
    run = _QuestionRun(config, model, prompts, question, store)
    run.observers = observers
    return run.answer()


class _QuestionRun:
    """One question under one strategy: the agent runs it made, in order."""

    def __init__(
        self,
        config: EvalConfig,
        model: Model,
        prompts: PromptSet,
        question: Question,
        store: Store | None,
    ) -> None:
        self.config = config
        #: Watch every agent run of the question (the CLI's progress shows its step).
        self.observers: Sequence[RunObserver] = ()
        self.model = StopAtNextExample(model, [f"\n{prompts.task_label}:"])
        self.prompts = prompts
        self.store = store
        self._question = question
        self._runs: list[tuple[RunResult, RunConfig]] = []

    def answer(self) -> Outcome:
        started = time.monotonic()
        strategy, samples = self.config.strategy, self.config.samples
        fallback: str | None = None
        votes: int | None = None
        if strategy == "cot":
            answer = self._cot(temperature=0.0)
        elif strategy in _SINGLE:
            answer = self._once(_SINGLE[strategy], temperature=0.0)
        elif strategy == "cot-sc":
            answer, votes = self._cot_sc()
        elif strategy == "react-cot-sc":
            answer = self._once("react", temperature=0.0)
            if (answer is None or _forced(self._runs[-1][0])) and not self._errored():
                (answer, votes), fallback = self._cot_sc(), "cot-sc"
        elif strategy == "cot-sc-react":
            answer, votes = self._cot_sc()
            if votes < samples / 2 and not self._errored():
                answer, fallback = self._once("react", temperature=0.0), "react"
        else:
            raise ConfigError(f"unknown strategy {strategy!r}; choose one of: {STRATEGIES}")
        record = self._record(answer, time.monotonic() - started)
        record.fallback, record.votes = fallback, votes
        if votes is not None:
            record.samples = samples
        return Outcome(record, [] if self.store is not None else self._runs)

    def _errored(self) -> bool:
        return any(run.status is Status.ERROR for run, _ in self._runs)

    def _cot_sc(self) -> tuple[str | None, int]:
        """``samples`` CoT runs at the sampling temperature; the majority answer and its votes."""
        answers: list[str | None] = []
        for _ in range(self.config.samples):
            answers.append(self._cot(temperature=self.config.sc_temperature))
            if self._errored():
                break
        key = normalize_answer if self.config.benchmark == "hotpotqa" else _label
        return majority_vote(answers, key)

    def _cot(self, *, temperature: float) -> str | None:
        """One CoT reply's answer; one without any is asked again under the grammar."""
        answer = self._once("cot", temperature=temperature)
        constrain = self.config.run.grammar and self.model.supports_grammar
        if answer is None and constrain and not self._errored():
            answer = self._once("cot", temperature=temperature, constrained=True)
        return answer

    def _once(
        self, kind: PromptKind, *, temperature: float, constrained: bool = False
    ) -> str | None:
        """One agent run of prompt ``kind``; returns its cleaned answer or ``None``.

        ``constrained``: decode with the grammar (a thought line, then the answer line).
        """
        question = self._question
        tag = EvalTag(benchmark=self.config.benchmark, question_id=question.id,
                      gold=question.gold, strategy=self.config.strategy)  # fmt: skip
        config = self.config.agent_config(kind, self.prompts, temperature).replace(eval_tag=tag)
        if constrained:
            config = config.replace(grammar=True)
        record: bool | Store = self.store if self.store is not None else False
        agent = Agent(self.model, config=config, record=record)  # tools: config.tools
        result = agent.run(self._question.question, observers=self.observers)
        if result.status not in _ENDED:
            raise Cancelled(
                f"run {result.run_id} ended {result.status}: the question is not recorded"
            )
        self._runs.append((result, agent.config))
        if result.status is Status.FINISHED:
            return clean_answer(result.answer)
        if kind == "standard" and result.steps and result.steps[-1].kind is StepKind.PARSE_ERROR:
            # Standard prompting asks for the bare answer; a chat model often drops the
            # "Answer:" label the paper's completion model wrote. Still counted as a parse error.
            return clean_answer(result.steps[-1].model_output)
        return None

    def _record(self, answer: str | None, seconds: float) -> QuestionRecord:
        config, question = self.config, self._question
        if config.benchmark == "fever":
            em = f1 = label_match(answer, question.gold)
        else:
            em, f1 = exact_match(answer, question.gold), f1_score(answer, question.gold)
        results = [run for run, _ in self._runs]
        error = next((run.error for run in results if run.status is Status.ERROR), None)
        status: RecordStatus = (
            "error" if error else "finished" if answer is not None else "no_answer"
        )
        usage = [run.usage for run in results]
        record = QuestionRecord(
            index=question.index,
            id=question.id,
            # every text a record keeps is redacted here, the one place records are made:
            # they are written to $TAO_HOME/evals and shown by `tao eval report` (S8)
            question=recorded_question(question.question),
            gold=redact(question.gold),
            answer=redact_optional(answer),  # scored above; kept and shown redacted
            em=em,
            f1=f1,
            strategy=config.strategy,
            benchmark=config.benchmark,
            model=config.model,
            status=status,
            steps=sum(len(run.steps) for run in results),
            model_calls=sum(u.model_calls for u in usage),
            input_tokens=sum(u.input_tokens for u in usage),
            output_tokens=sum(u.output_tokens for u in usage),
            seconds=round(seconds, 3),
            parse_failures=sum(
                1 for run in results for step in run.steps if step.kind is StepKind.PARSE_ERROR
            ),
            run_ids=[run.run_id for run in results],
            error=redact_optional(error),
            cost_usd=total_cost(u.cost_usd for u in usage),
            forced=answer is not None and _forced(results[-1]),
        )
        record.tokens = record.input_tokens + record.output_tokens
        return record


def _forced(result: RunResult) -> bool:
    """Whether the run's answer came from a step that could only answer. A question's last
    run tells: it is the run the answer came from, or a CoT sample (one step, never forced)
    when CoT-SC voted."""
    return result.status is Status.FINISHED and any(step.forced for step in result.steps)


def clean_answer(answer: str | None) -> str | None:
    """The first non-empty line of an answer (a model may run on past it); ``None`` if empty."""
    if answer is None:
        return None
    for line in answer.splitlines():
        if line.strip():
            return line.strip()
    return None
