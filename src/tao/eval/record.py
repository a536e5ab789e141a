"""What an eval keeps per question: one JSON line in the results file.

    {"index": 3, "id": "5a8b...", "question": "...", "gold": "yes", "answer": "no",
     "em": 0.0, "f1": 0.0, "strategy": "react", "benchmark": "hotpotqa", "model": "local",
     "status": "finished", "steps": 4, "model_calls": 4, "tokens": 10422,
     "input_tokens": 10300, "output_tokens": 122, "seconds": 41.2, "parse_failures": 0,
     "fallback": null, "votes": null, "samples": null, "run_ids": ["0193..."], "error": null}

``status`` is ``finished`` (an answer), ``no_answer`` (budget spent, no answer) or
``error`` (a model call failed; ``error`` says why). ``fallback`` names the
strategy a combination fell back to (``cot-sc`` or ``react``); ``votes`` and
``samples`` are CoT-SC's majority count and sample count.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

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
    status: str = "finished"
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionRecord:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def comparable(self) -> dict[str, Any]:
        """The record without timings and run ids: equal for equal model behaviour."""
        return {k: v for k, v in self.to_dict().items() if k not in VOLATILE}
