"""What an eval keeps per question: one JSON line in the results file.

    {"index": 3, "id": "5a8b...", "question": "...", "gold": "yes", "answer": "no",
     "em": 0.0, "f1": 0.0, "strategy": "react", "benchmark": "hotpotqa", "model": "local",
     "status": "finished", "steps": 4, "model_calls": 4, "tokens": 10422,
     "input_tokens": 10300, "output_tokens": 122, "seconds": 41.2, "parse_failures": 0,
     "fallback": null, "votes": null, "samples": null, "run_ids": ["0193..."], "error": null,
     "cost_usd": 0.0}

``status`` is ``finished`` (an answer), ``no_answer`` (budget spent, no answer) or
``error`` (a model call failed; ``error`` says why). ``fallback`` names the
strategy a combination fell back to (``cot-sc`` or ``react``); ``votes`` and
``samples`` are CoT-SC's majority count and sample count. ``forced``: the answer
came from a step that could only answer (the step budget spent, SPEC L5, or the model
repeating a call), so scores can be reported with and without such answers.

The line format only ever gains fields (``cost_usd``, ``null`` when unknown), so any
results file resumes;
:meth:`QuestionRecord.from_json` reads it through :mod:`tao.state.codec`, which refuses a
wrong type naming the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from tao.redact import redact
from tao.state import codec
from tao.state.jsontypes import JSON, JSONObject

#: How a question ended; an eval's own word, not a run's :class:`tao.state.result.Status`.
RecordStatus = Literal["finished", "no_answer", "error"]

#: Fields that vary between two runs of a deterministic model (time, ids).
VOLATILE = frozenset({"seconds", "run_ids"})


@dataclass
class QuestionRecord:
    index: int
    id: str
    question: str
    gold: str
    answer: str | None
    em: float
    f1: float
    strategy: str
    benchmark: str
    model: str
    status: RecordStatus = "finished"
    steps: int = 0
    model_calls: int = 0
    tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    parse_failures: int = 0
    fallback: str | None = None
    votes: int | None = None
    samples: int | None = None
    run_ids: list[str] = field(default_factory=list)
    error: str | None = None
    cost_usd: float | None = None
    """US dollars over the question's runs; ``None``: unknown (a model with no price, or a
    results line written before costs were kept)."""
    forced: bool = False
    """The answer was forced: the run's last step could only answer (its step budget spent,
    or the model repeating a call)."""

    def to_json(self) -> JSONObject:
        return codec.encode(self)

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> QuestionRecord:
        """Read one results line; a missing or mistyped field is a :class:`ValueError`."""
        return codec.decode(cls, dict(data))

    def comparable(self) -> JSONObject:
        """The record without timings and run ids: equal for equal model behaviour."""
        return {k: v for k, v in self.to_json().items() if k not in VOLATILE}


def recorded_question(text: str) -> str:
    """A question as its record keeps it: redacted (S8), since records are written to
    ``$TAO_HOME/evals`` and shown by ``tao eval report``; a later run finds its stored
    answers by comparing this."""
    return redact(text)


def total_cost(costs: Iterable[float | None]) -> float | None:
    """The sum of ``costs`` in US dollars; unknown (``None``) if any one is."""
    total = 0.0
    for cost in costs:
        if cost is None:
            return None
        total += cost
    return total


codec.shape(QuestionRecord, missing={"answer": None})
