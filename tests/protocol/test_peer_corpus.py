"""Peers' parser cases as a regression corpus (issue 13 item 1): LangChain's ReAct output
parsers and the ReAct paper's own trajectories, transcribed in data/peer_cases.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tao.protocol.labels import LABELS
from tao.protocol.text import Action, FinalAnswer, ParseFailure, parse_reply

CORPUS = json.loads((Path(__file__).parent / "data" / "peer_cases.json").read_text("utf-8"))
CASES = CORPUS["cases"]


def test_corpus_names_a_source_for_every_case() -> None:
    assert len(CASES) >= 50
    repos = {case["source"].split(":", 1)[0] for case in CASES}
    assert repos == {"langchain-ai/langchain", "ysymyth/ReAct"}


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c['source'].split('/')[-1]}::{c['case']}" for c in CASES]
)
def test_peer_case_L9_L11(case: dict[str, object]) -> None:
    text = case["input"]
    assert isinstance(text, str)
    parsed = parse_reply(text, LABELS["en"])
    expect = case["expect"]
    assert isinstance(expect, dict)
    if "answer" in expect:
        assert isinstance(parsed, FinalAnswer), parsed
        assert parsed.answer == expect["answer"]
    elif expect.get("failure"):
        assert isinstance(parsed, ParseFailure), parsed
    else:
        assert isinstance(parsed, Action), parsed
        assert (parsed.tool, parsed.argument) == (expect["tool"], expect["argument"])
    # Whatever the peer kept, tao's transcript never holds a made-up Observation (L2).
    if not isinstance(parsed, ParseFailure):
        assert "\nObservation" not in parsed.text
