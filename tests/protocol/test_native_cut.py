"""The native protocol's client-side cut of made-up text (issue 13 item 1.6, SPEC L2, L3)."""

from __future__ import annotations

import pytest

from tao.protocol.labels import LABELS
from tao.protocol.native import cut_made_up


@pytest.mark.parametrize("lang", list(LABELS))
def test_made_up_observation_is_cut_in_every_language(lang: str) -> None:
    lab = LABELS[lang]
    text = f"{lab.thought}: x\n{lab.observation}: 42\n{lab.answer}: 42"
    assert cut_made_up(text, lab, has_calls=True) == f"{lab.thought}: x"
    assert cut_made_up(text, lab, has_calls=False) == f"{lab.thought}: x"


@pytest.mark.parametrize(
    "text",
    [
        "I will compute.\nObservation: 42",
        "I will compute.\n**Observation 1:** 42",
        "I will compute.\n  Observation：42",
        "I will compute. Observation: 42",
    ],
)
def test_observation_spellings_the_text_protocol_accepts(text: str) -> None:
    assert cut_made_up(text, LABELS["en"], has_calls=True) == "I will compute."


def test_final_answer_is_cut_only_beside_tool_calls() -> None:
    en = LABELS["en"]
    text = "Let me check.\nFinal Answer: 42"
    assert cut_made_up(text, en, has_calls=True) == "Let me check."
    assert cut_made_up(text, en, has_calls=False) == text


def test_text_without_made_up_labels_is_unchanged() -> None:
    text = "I need the calculator for 17 * 23.  "
    assert cut_made_up(text, LABELS["en"], has_calls=True) == text


def test_cut_is_linear_on_label_floods_L14() -> None:
    flood = "Final Answer" * 80_000
    assert cut_made_up(flood, LABELS["en"], has_calls=True) == flood
