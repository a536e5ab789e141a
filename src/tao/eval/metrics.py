"""Scoring as the benchmarks define it: HotpotQA exact match and F1, FEVER label accuracy.

The HotpotQA normalisation is the official one: lower-case, strip punctuation,
drop the articles a/an/the, fold white space. F1 is over the normalised tokens,
and a yes/no answer scores F1 only when it matches exactly.

    >>> exact_match("The Richard Nixon.", "richard nixon")
    1.0
    >>> round(f1_score("Richard Milhous Nixon", "Richard Nixon"), 3)
    0.8
    >>> normalize_label("Supported.")
    'SUPPORTS'
    >>> bootstrap_ci([1.0, 0.0, 1.0, 1.0])
    (0.25, 1.0)

Scores over a few dozen questions are noisy: :func:`bootstrap_ci` gives the 95%
interval that ``tao eval`` prints beside each score, and below
:data:`MIN_COMPARABLE_N` questions it warns that strategies cannot be ranked.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)

SUPPORTS, REFUTES, NOT_ENOUGH_INFO = "SUPPORTS", "REFUTES", "NOT ENOUGH INFO"
#: Fewer questions than this and a difference between strategies says little (issue 16).
MIN_COMPARABLE_N = 30
BOOTSTRAP_RESAMPLES = 2000


def normalize_answer(text: str) -> str:
    """The official HotpotQA normalisation."""
    lowered = text.lower()
    no_punctuation = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", no_punctuation).split())


def exact_match(prediction: str | None, gold: str) -> float:
    """1.0 when the normalised answers are equal; no answer scores 0."""
    if prediction is None:
        return 0.0
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str | None, gold: str) -> float:
    """Token F1 of the normalised answers, as the official HotpotQA script computes it."""
    if prediction is None:
        return 0.0
    pred, truth = normalize_answer(prediction), normalize_answer(gold)
    special = ("yes", "no", "noanswer")
    if (pred in special or truth in special) and pred != truth:
        return 0.0
    pred_tokens, truth_tokens = pred.split(), truth.split()
    same = sum((Counter(pred_tokens) & Counter(truth_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)


_LABEL_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (NOT_ENOUGH_INFO, ("NOT ENOUGH INFO", "NOT ENOUGH INFORMATION", "NEI", "NOT ENOUGH")),
    (SUPPORTS, ("SUPPORTS", "SUPPORTED", "SUPPORT", "TRUE")),
    (REFUTES, ("REFUTES", "REFUTED", "REFUTE", "FALSE")),
)


def normalize_label(text: str | None) -> str | None:
    """Map a FEVER answer to ``SUPPORTS``, ``REFUTES`` or ``NOT ENOUGH INFO``; else ``None``.

    Case, punctuation and underscores are ignored (``not_enough_info``, ``Refuted.``).
    A longer answer counts when exactly one label's words occur in it.
    """
    if text is None:
        return None
    words = " ".join(re.sub(r"[^A-Z ]+", " ", text.upper().replace("_", " ")).split())
    for label, forms in _LABEL_WORDS:
        if words in forms:
            return label
    found = {
        label
        for label, forms in _LABEL_WORDS
        if any(re.search(rf"\b{form}\b", words) for form in forms if form not in ("TRUE", "FALSE"))
    }
    if found == {NOT_ENOUGH_INFO, SUPPORTS} or found == {NOT_ENOUGH_INFO, REFUTES}:
        found = {NOT_ENOUGH_INFO}  # "not enough information to support it"
    return found.pop() if len(found) == 1 else None


def label_match(prediction: str | None, gold: str) -> float:
    """FEVER: 1.0 when the normalised labels agree; an unreadable answer scores 0."""
    label = normalize_label(prediction)
    return float(label is not None and label == normalize_label(gold))


def majority_vote(
    answers: Sequence[str | None], key: Callable[[str], object]
) -> tuple[str | None, int]:
    """The most frequent answer under ``key`` and its vote count; ties go to the earliest.

    Missing answers (``None``) and answers whose key is empty or ``None`` do not vote.
    The returned text is the first sample that gave the winning answer.
    """
    counts: Counter[object] = Counter()
    first: dict[object, str] = {}
    for answer in answers:
        if answer is None:
            continue
        normalized = key(answer)
        if normalized is None or normalized == "":
            continue
        counts[normalized] += 1
        first.setdefault(normalized, answer)
    if not counts:
        return None, 0
    best = max(counts.values())
    winner = next(k for k in first if counts[k] == best)  # dicts keep first-seen order
    return first[winner], best


def bootstrap_ci(
    values: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """The percentile-bootstrap ``level`` interval of the mean of ``values``, rounded to 4 places.

    Seeded, so the same scores always print the same interval. ``(0.0, 0.0)`` when empty.
    """
    if not values:
        return (0.0, 0.0)
    import numpy as np

    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1.0 - level) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return (round(float(low), 4), round(float(high), 4))
