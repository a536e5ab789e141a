"""EM / F1 / FEVER labels / voting against hand-computed cases."""

from __future__ import annotations

import pytest

from tao.eval.metrics import (
    bootstrap_ci,
    exact_match,
    f1_score,
    label_match,
    majority_vote,
    normalize_answer,
    normalize_label,
)


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The Richard Nixon.", "richard nixon"),
        ("  An   apple, a day!  ", "apple day"),
        ("Theatre of the Absurd", "theatre of absurd"),  # "the" only as a whole word
        ("1,800 to 7,000 ft", "1800 to 7000 ft"),
        ("A", ""),
    ],
)
def test_normalize_answer(text: str, normalized: str) -> None:
    assert normalize_answer(text) == normalized


def test_exact_match_uses_the_normalisation() -> None:
    assert exact_match("the Boston Celtics!", "Boston Celtics") == 1.0
    assert exact_match("Celtics", "Boston Celtics") == 0.0
    assert exact_match(None, "x") == 0.0


def test_f1_hand_computed() -> None:
    # pred tokens: richard milhous nixon (3); gold: richard nixon (2); common 2
    # precision 2/3, recall 1 → F1 = 2·(2/3)·1 / (2/3 + 1) = 0.8
    assert f1_score("Richard Milhous Nixon", "Richard Nixon") == pytest.approx(0.8)
    # pred: new paltz new york (4), gold: new york (2): common = new×1 + york×1 = 2
    # precision 2/4, recall 2/2 → F1 = 2·0.5·1/1.5 = 2/3
    assert f1_score("New Paltz, New York", "New York") == pytest.approx(2 / 3)
    assert f1_score("The Saimaa Gesture", "Saimaa Gesture") == 1.0
    assert f1_score("Greece", "Italy") == 0.0
    assert f1_score(None, "Italy") == 0.0


def test_f1_yes_no_only_counts_when_exact() -> None:
    assert f1_score("yes", "yes") == 1.0
    assert f1_score("yes it is", "yes") == 0.0  # official script: yes/no must match exactly
    assert f1_score("no", "no way") == 0.0


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("SUPPORTS", "SUPPORTS"),
        ("supported.", "SUPPORTS"),
        ("Refutes", "REFUTES"),
        ("REFUTED", "REFUTES"),
        ("NOT ENOUGH INFO", "NOT ENOUGH INFO"),
        ("not_enough_info", "NOT ENOUGH INFO"),
        ("Not enough information", "NOT ENOUGH INFO"),
        ("The claim is refuted by the page.", "REFUTES"),
        ("There is not enough information to support it", "NOT ENOUGH INFO"),
        ("supports or refutes", None),
        ("Paris", None),
        ("", None),
        (None, None),
    ],
)
def test_normalize_label(text: str | None, label: str | None) -> None:
    assert normalize_label(text) == label


def test_label_match() -> None:
    assert label_match("Supported", "SUPPORTS") == 1.0
    assert label_match("REFUTES", "SUPPORTS") == 0.0
    assert label_match("maybe", "SUPPORTS") == 0.0
    assert label_match(None, "SUPPORTS") == 0.0


def test_majority_vote_counts_normalised_answers_and_breaks_ties_by_first_seen() -> None:
    answers = ["Richard Nixon", "richard nixon.", None, "Nixon", "The Nixon", "nixon"]
    assert majority_vote(answers, normalize_answer) == ("Nixon", 3)
    assert majority_vote(["b", "a", "a", "b"], normalize_answer) == ("b", 2)
    assert majority_vote([None, None, "the"], normalize_answer) == (None, 0)  # "" does not vote
    assert majority_vote(["Supported", "REFUTES", "supports"], normalize_label) == ("Supported", 2)


def test_bootstrap_interval_of_a_known_sample_is_seeded_and_brackets_the_mean() -> None:
    scores = [1.0] * 30 + [0.0] * 70  # EM 30% on 100 questions
    low, high = bootstrap_ci(scores)
    assert bootstrap_ci(scores) == (low, high)  # seeded: the report never changes
    # The normal approximation gives 0.30 +/- 1.96 * sqrt(0.3 * 0.7 / 100) = 0.21..0.39.
    assert low == pytest.approx(0.21, abs=0.02) and high == pytest.approx(0.39, abs=0.02)
    assert bootstrap_ci(scores, seed=1) != (low, high) or bootstrap_ci(scores[:10]) != (low, high)
    assert bootstrap_ci([1.0] * 5) == (1.0, 1.0)  # no spread, no width
    assert bootstrap_ci([]) == (0.0, 0.0)


def test_a_smaller_sample_gets_a_wider_interval() -> None:
    low10, high10 = bootstrap_ci([1.0] * 3 + [0.0] * 7)
    low100, high100 = bootstrap_ci([1.0] * 30 + [0.0] * 70)
    assert high10 - low10 > 2 * (high100 - low100)


def test_comparison_warnings_flag_small_samples_and_overlapping_intervals() -> None:
    from tao.eval.record import QuestionRecord
    from tao.eval.summary import StrategySummary, comparison_warnings, summarize

    def summary(strategy: str, right: int, n: int) -> StrategySummary:
        records = [
            QuestionRecord(
                i,
                f"q{i}",
                "Q?",
                "A",
                "A",
                float(i < right),
                float(i < right),
                strategy,
                "hotpotqa",
                "m",
            )
            for i in range(n)
        ]
        return summarize(records, "hotpotqa", strategy, "m")

    far_apart = [summary("react", 90, 100), summary("cot", 20, 100)]
    assert comparison_warnings(far_apart) == []
    close = [summary("react", 32, 100), summary("cot", 30, 100)]
    (overlap,) = comparison_warnings(close)
    assert "best, react, overlaps cot" in overlap
    small = comparison_warnings([summary("react", 9, 10), summary("cot", 0, 10)])
    assert small == ["n=10 < 30: too few questions to compare strategies"]
