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
:meth:`QuestionRecord.from_dict` reads it field by field and refuses a wrong type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Literal, cast

from tao.state.jsontypes import JSON, JSONObject

#: How a question ended; an eval's own word, not a run's :class:`tao.state.result.Status`.
RecordStatus = Literal["finished", "no_answer", "error"]
_STATUSES: tuple[RecordStatus, ...] = ("finished", "no_answer", "error")

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

    def to_dict(self) -> JSONObject:
        return cast(JSONObject, asdict(self))

    @classmethod
    def from_dict(cls, data: Mapping[str, JSON]) -> QuestionRecord:
        """Read one results line; a missing or mistyped field is a :class:`ValueError`."""
        read = _Fields(data)
        return cls(
            index=read.integer("index"),
            id=read.text("id"),
            question=read.text("question"),
            gold=read.text("gold"),
            answer=read.optional_text("answer"),
            em=read.number("em"),
            f1=read.number("f1"),
            strategy=read.text("strategy"),
            benchmark=read.text("benchmark"),
            model=read.text("model"),
            status=read.status(),
            steps=read.integer("steps", 0),
            model_calls=read.integer("model_calls", 0),
            tokens=read.integer("tokens", 0),
            input_tokens=read.integer("input_tokens", 0),
            output_tokens=read.integer("output_tokens", 0),
            seconds=read.number("seconds", 0.0),
            parse_failures=read.integer("parse_failures", 0),
            fallback=read.optional_text("fallback"),
            votes=read.optional_integer("votes"),
            samples=read.optional_integer("samples"),
            run_ids=read.texts("run_ids"),
            error=read.optional_text("error"),
            cost_usd=read.optional_number("cost_usd"),
            forced=read.flag("forced"),
        )

    def comparable(self) -> JSONObject:
        """The record without timings and run ids: equal for equal model behaviour."""
        return {k: v for k, v in self.to_dict().items() if k not in VOLATILE}


def total_cost(costs: Iterable[float | None]) -> float | None:
    """The sum of ``costs`` in US dollars; unknown (``None``) if any one is."""
    total = 0.0
    for cost in costs:
        if cost is None:
            return None
        total += cost
    return total


class _Fields:
    """Typed reads of one stored line; a missing required or mistyped field is a ValueError."""

    def __init__(self, data: Mapping[str, JSON]) -> None:
        self.data = data

    def integer(self, name: str, default: int | None = None) -> int:
        value = self.data.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, not {value!r}")
        return value

    def number(self, name: str, default: float | None = None) -> float:
        value = self.data.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{name} must be a number, not {value!r}")
        return float(value)

    def text(self, name: str) -> str:
        value = self.data.get(name)
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a string, not {value!r}")
        return value

    def optional_text(self, name: str) -> str | None:
        return None if self.data.get(name) is None else self.text(name)

    def optional_number(self, name: str) -> float | None:
        return None if self.data.get(name) is None else self.number(name)

    def optional_integer(self, name: str) -> int | None:
        return None if self.data.get(name) is None else self.integer(name)

    def texts(self, name: str) -> list[str]:
        value = self.data.get(name, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(f"{name} must be a list of strings, not {value!r}")
        return [str(item) for item in value]

    def flag(self, name: str) -> bool:
        value = self.data.get(name, False)
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, not {value!r}")
        return value

    def status(self) -> RecordStatus:
        value = self.data.get("status", "finished")
        for status in _STATUSES:
            if value == status:
                return status
        raise ValueError(f"status must be one of {', '.join(_STATUSES)}, not {value!r}")
