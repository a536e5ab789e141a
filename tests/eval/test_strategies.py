"""Every strategy's control flow with the replay model: answers, votes, both fallbacks."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tao.eval.data import load_questions
from tao.eval.record import QuestionRecord
from tao.eval.runner import run_strategy
from tao.eval.strategies import answer_question
from tao.models.base import ModelReply, ModelRequest
from tao.models.replay import ReplayModel
from tao.state.config import EvalTag
from tao.store.factory import open_store

from .conftest import EvalData

Replay = Callable[[list[str]], Path]


def run(
    eval_data: EvalData,
    replay: Replay,
    strategy: str,
    replies: list[str],
    *,
    limit: int = 1,
    start: int = 0,
    benchmark: str = "hotpotqa",
    **settings: Any,
) -> list[QuestionRecord]:
    path = replay(replies)
    questions = load_questions(
        "fever" if benchmark == "fever" else "hotpotqa",
        eval_data.claims if benchmark == "fever" else eval_data.questions,
    )[start : start + limit]
    model = ReplayModel(path)
    result = run_strategy(
        eval_data.config(strategy, f"replay:{path}", benchmark=benchmark, **settings),
        questions,
        store=open_store(),
        answer=answer_question,
        model=model,
    )
    assert model.calls == len(replies), "every scripted reply is used, no more"
    return result.records


def test_standard_answers_directly_and_is_recorded(eval_data: EvalData, replay: Replay) -> None:
    records = run(
        eval_data, replay, "standard", ["Answer: yes", "Answer: Richard Milhous Nixon"], limit=2
    )
    assert [r.answer for r in records] == ["yes", "Richard Milhous Nixon"]
    assert [r.em for r in records] == [1.0, 0.0]
    assert records[1].f1 == pytest.approx(0.8)
    assert [r.steps for r in records] == [1, 1]
    stored = open_store().get_run(records[1].run_ids[0])
    assert stored.task == "Who was Milhouse named after?"
    first_turns = stored.steps[0].model_input
    assert first_turns[0]["content"].startswith("[STANDARD]")
    assert first_turns[1]["content"] == "Question: Who was Milhouse named after?"
    # the run log says which question it answered and what was expected (the web page shows it)
    assert stored.config is not None
    assert stored.config.eval_tag == EvalTag(
        benchmark="hotpotqa", question_id=records[1].id, gold=records[1].gold, strategy="standard"
    )


def test_cot_stops_at_the_next_example(eval_data: EvalData, replay: Replay) -> None:
    reply = "Thought: Both are American.\nAnswer: yes\nQuestion: Who else?\nThought: x\nAnswer: no"
    (record,) = run(eval_data, replay, "cot", [reply])
    assert record.answer == "yes" and record.em == 1.0 and record.parse_failures == 0


def test_standard_takes_an_unlabelled_reply_but_counts_the_parse_error(
    eval_data: EvalData, replay: Replay
) -> None:
    (record,) = run(eval_data, replay, "standard", ["Yes.\nThey are both American."])
    assert record.answer == "Yes." and record.em == 1.0 and record.status == "finished"
    assert record.parse_failures == 1


def test_cot_without_an_answer_line_has_no_answer(eval_data: EvalData, replay: Replay) -> None:
    (record,) = run(eval_data, replay, "cot", ["They are both American, I think."])
    assert record.answer is None and record.status == "no_answer"
    assert record.parse_failures == 1 and record.em == 0.0


def test_cot_sc_majority_vote(eval_data: EvalData, replay: Replay) -> None:
    answers = ["Answer: yes", "Answer: no", "Answer: Yes.", "Answer: no", "Answer: yes!"]
    (record,) = run(eval_data, replay, "cot-sc", answers, samples=5)
    assert record.answer == "yes" and record.votes == 3 and record.samples == 5
    assert record.model_calls == 5 and len(record.run_ids) == 5
    roles = [json.loads(json.dumps(open_store().get_run(i).task)) for i in record.run_ids]
    assert len(roles) == 5


def test_act_uses_the_wiki_tools_without_thoughts(eval_data: EvalData, replay: Replay) -> None:
    replies = [
        "Action 1: Search[Milhouse]",
        "Action 2: Lookup[named after]",
        "Action 3: Finish[Richard Nixon]",
    ]
    (record,) = run(eval_data, replay, "act", replies, start=1)
    assert record.answer == "Richard Nixon" and record.em == 1.0 and record.steps == 3
    steps = open_store().get_run(record.run_ids[0]).steps
    assert (
        steps[0].observation == "Milhouse is a character. Milhouse was named after Richard Nixon."
    )
    assert steps[1].observation == "(Result 1 / 1) Milhouse was named after Richard Nixon."
    # the paper's numbered format: the observation goes back as "Observation 1: ..."
    sent = steps[1].model_input[-1]["content"]
    assert sent.startswith("Observation 1:") and "Milhouse is a character" in sent


def test_react_counts_parse_failures_and_cuts_invented_observations(
    eval_data: EvalData, replay: Replay
) -> None:
    replies = [
        "I guess they are both American.",
        "Thought 2: Check.\nAction 2: Search[Ed Wood]\nObservation 2: Ed Wood was French.",
        "Thought 3: Both American.\nAction 3: Finish[yes]",
    ]
    (record,) = run(eval_data, replay, "react", replies)
    assert record.answer == "yes" and record.parse_failures == 1 and record.steps == 3
    step = open_store().get_run(record.run_ids[0]).steps[1]
    assert step.observation is not None and "American filmmaker" in step.observation


def test_react_out_of_steps_has_no_answer(eval_data: EvalData, replay: Replay) -> None:
    replies = ["Thought 1: a\nAction 1: Search[Ed Wood]", "Thought 2: b\nAction 2: Search[Nope]"]
    (record,) = run(eval_data, replay, "react", replies, max_steps=2)
    assert record.status == "no_answer" and record.answer is None and record.fallback is None


def test_an_answer_forced_by_the_step_budget_is_marked_and_scored_apart(
    eval_data: EvalData, replay: Replay
) -> None:
    """SPEC L5 / issue 16: the last step of the budget may only answer; the eval says which
    answers came that way, and scores them with and without."""
    from tao.eval.summary import summarize, summary_table

    forced = ["Thought 1: a\nAction 1: Search[Ed Wood]", "Thought 2: b\nAction 2: Finish[1924]"]
    free = ["Thought 1: a\nAction 1: Finish[Los Angeles]"]
    records = run(eval_data, replay, "react", forced + free, limit=2, start=2, max_steps=2)
    assert [(r.answer, r.em, r.forced) for r in records] == [
        ("1924", 1.0, True),
        ("Los Angeles", 1.0, False),
    ]
    stored = open_store().get_run(records[0].run_ids[0])
    assert stored.stop_reason == "answer forced by the step limit of 2"
    summary = summarize(records, "hotpotqa", "react", "m")
    assert (summary["em"], summary["forced"], summary["unforced"]) == (1.0, 1, 0.5)
    assert "2 (1)" in _text(summary_table([summary]))
    line = json.loads(Path(run_strategy_file(eval_data, "react")).read_text().splitlines()[0])
    assert line["forced"] is True  # kept in the results file, so a resumed eval knows


def run_strategy_file(eval_data: EvalData, strategy: str) -> str:
    from tao.paths import tao_home

    (path,) = (tao_home() / "evals").glob(f"hotpotqa-{strategy}-*.jsonl")
    return str(path)


def _text(table: object) -> str:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_react_cot_sc_falls_back_when_react_has_no_answer(
    eval_data: EvalData, replay: Replay
) -> None:
    replies = [
        "Thought 1: a\nAction 1: Search[Ed Wood]",
        "Thought 2: b\nAction 2: Lookup[born]",
        "Thought: He was born in 1924.\nAnswer: 1924",
        "Thought: Maybe 1925.\nAnswer: 1925",
        "Thought: 1924.\nAnswer: 1924",
    ]
    (record,) = run(eval_data, replay, "react-cot-sc", replies, start=2, max_steps=2, samples=3)
    assert record.fallback == "cot-sc" and record.answer == "1924" and record.em == 1.0
    assert record.votes == 2 and record.samples == 3
    assert record.steps == 5 and len(record.run_ids) == 4


def test_react_cot_sc_falls_back_when_react_answer_was_forced(
    eval_data: EvalData, replay: Replay
) -> None:
    """The paper's ReAct backs off to CoT-SC when its steps run out; tao's last step may
    only answer (SPEC L5), so that forced answer is not ReAct's own and CoT-SC decides."""
    replies = [
        "Thought 1: a\nAction 1: Search[Ed Wood]",
        "Thought 2: b\nAction 2: Finish[1925]",  # step 2 of 2: forced
        "Thought: He was born in 1924.\nAnswer: 1924",
        "Thought: 1924.\nAnswer: 1924",
        "Thought: Maybe 1925.\nAnswer: 1925",
    ]
    (record,) = run(eval_data, replay, "react-cot-sc", replies, start=2, max_steps=2, samples=3)
    assert record.fallback == "cot-sc" and record.answer == "1924" and record.em == 1.0
    assert record.forced is False and record.votes == 2 and len(record.run_ids) == 4


def test_derived_react_cot_sc_backs_off_from_a_forced_answer_too(
    eval_data: EvalData, replay: Replay
) -> None:
    """``--strategy all`` derives the combination from the ReAct and CoT-SC records; it must
    back off where running ``--strategy react-cot-sc`` alone would."""
    from tao.eval.runner import derive_combination

    react = [
        "Thought 1: a\nAction 1: Search[Ed Wood]",
        "Thought 2: b\nAction 2: Finish[1925]",  # forced
        "Thought 1: a\nAction 1: Finish[Los Angeles]",  # its own answer
    ]
    samples = ["Thought: t\nAnswer: 1924"] * 3 + ["Thought: t\nAnswer: Paris"] * 3
    questions = load_questions("hotpotqa", eval_data.questions)[2:4]
    runs = {}
    for strategy, replies in (("react", react), ("cot-sc", samples)):
        path = replay(replies)
        config = eval_data.config(strategy, f"replay:{path}", max_steps=2, samples=3)
        runs[strategy] = run_strategy(
            config, questions, store=open_store(), answer=answer_question, model=ReplayModel(path)
        )
    combined = derive_combination(
        eval_data.config("react-cot-sc", "replay:x", max_steps=2, samples=3),
        runs["react"],
        runs["cot-sc"],
        questions,
    )
    assert [(r.answer, r.fallback, r.forced) for r in combined.records] == [
        ("1924", "cot-sc", False),
        ("Los Angeles", None, False),
    ]
    assert combined.records[0].run_ids == [
        *runs["react"].records[0].run_ids,
        *runs["cot-sc"].records[0].run_ids,
    ]


def test_react_cot_sc_keeps_a_react_answer(eval_data: EvalData, replay: Replay) -> None:
    replies = ["Thought 1: a\nAction 1: Search[Ed Wood]", "Thought 2: b\nAction 2: Finish[1924]"]
    (record,) = run(eval_data, replay, "react-cot-sc", replies, start=2, samples=3)
    assert record.fallback is None and record.answer == "1924" and record.votes is None


@pytest.mark.parametrize(
    ("answers", "falls_back"),
    [
        (["x", "x", "y", "z"], False),  # 2 of 4 votes: not fewer than n/2
        (["x", "x", "y", "z", "w"], True),  # 2 of 5: fewer than 2.5
        (["x", "x", "x", "z", "w"], False),  # 3 of 5
        (["x", "y", "z"], True),  # 1 of 3
    ],
)
def test_cot_sc_react_vote_threshold(
    eval_data: EvalData, replay: Replay, answers: list[str], falls_back: bool
) -> None:
    replies = [f"Thought: t\nAnswer: {a}" for a in answers]
    if falls_back:
        replies += [
            "Thought 1: s\nAction 1: Search[Ed Wood]",
            "Thought 2: f\nAction 2: Finish[1924]",
        ]
    (record,) = run(eval_data, replay, "cot-sc-react", replies, start=2, samples=len(answers))
    votes = max(answers.count(a) for a in answers)
    assert record.votes == votes and record.samples == len(answers)
    if falls_back:
        assert record.fallback == "react" and record.answer == "1924" and record.em == 1.0
        assert len(record.run_ids) == len(answers) + 1
    else:
        assert record.fallback is None and record.answer == "x"
        assert len(record.run_ids) == len(answers)


def test_a_model_error_is_recorded_and_does_not_trigger_a_fallback(
    eval_data: EvalData, replay: Replay
) -> None:
    (record,) = run(eval_data, replay, "react-cot-sc", ["Thought 1: a\nAction 1: Search[Ed Wood]"])
    assert record.status == "error" and record.fallback is None and record.answer is None
    assert record.error is not None and "no reply left" in record.error


def test_fever_accuracy_with_label_normalisation(eval_data: EvalData, replay: Replay) -> None:
    replies = ["Answer: Supported.", "Answer: REFUTES", "Answer: supports"]
    (record,) = run(eval_data, replay, "cot-sc", replies, benchmark="fever", samples=3)
    assert record.answer == "Supported." and record.votes == 2 and record.em == 1.0
    replies = ["Thought 1: no\nAction 1: Finish[refuted]"]
    (record,) = run(eval_data, replay, "react", replies, benchmark="fever", start=1)
    assert record.em == 1.0 and record.f1 == 1.0


def test_stop_at_next_example_cuts_where_the_next_example_begins(replay: Replay) -> None:
    """Sync and async: the stop goes to a backend that honours it, and is cut client-side."""
    import asyncio

    from tao.eval.strategies import StopAtNextExample
    from tao.models.base import ModelRequest

    reply = "Thought: Both are American.\nAnswer: yes\nQuestion: Who else?\nAnswer: no"
    model = StopAtNextExample(ReplayModel(replay([reply, reply])), ["\nQuestion:"])
    request = ModelRequest(messages=[{"role": "user", "content": "Question: Q?"}], stop=["\nX:"])
    assert model.complete(request).text == "Thought: Both are American.\nAnswer: yes"
    assert asyncio.run(model.acomplete(request)).text == "Thought: Both are American.\nAnswer: yes"
    assert model.supports_tools is False and model.name == model.inner.name


class _CutBeforeAnswer:
    """The embedded model, but a free (grammar-less) reply stops before its answer line.

    Stands in for a sample that rambles past its budget; constrained requests go through
    unchanged, so what the grammar makes of the retry is the real model's.
    """

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name
        self.supports_stop, self.supports_grammar = True, True
        self.supports_tools = False

    def complete(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        if request.grammar is None:
            request = dataclasses.replace(request, stop=[*request.stop, "Answer"])
        reply: ModelReply = self.inner.complete(request, on_text)
        return reply

    async def acomplete(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        return self.complete(request, on_text)


@pytest.mark.local_model
def test_cot_sc_sample_without_an_answer_is_asked_again_under_the_grammar(
    eval_data: EvalData,
) -> None:
    """Issue 16: a CoT-SC sample that ends without an answer line is constrained, not lost."""
    from tao.models.install import model_is_installed, runtime_is_installed

    if not (runtime_is_installed() and model_is_installed()):
        pytest.skip("needs the embedded model (python -m tao.models.install)")
    from tao.models.local import LocalModel

    questions = load_questions("hotpotqa", eval_data.questions)[:1]
    config = eval_data.config("cot-sc", "local", samples=1, max_reply_tokens=96)
    config = dataclasses.replace(config, sc_temperature=0.0)  # greedy: the same every time
    model = _CutBeforeAnswer(LocalModel())
    (record,) = run_strategy(
        config, questions, store=open_store(), answer=answer_question, model=model
    ).records
    assert record.parse_failures == 1  # the free sample had no answer line
    assert len(record.run_ids) == 2  # ... so it was asked once more, constrained
    assert record.answer is not None and record.votes == 1


@pytest.mark.local_model
def test_a_cot_reply_without_an_answer_is_asked_again_under_the_grammar(
    eval_data: EvalData,
) -> None:
    """Issue 16: plain CoT loses no answer to a reply whose answer line it cannot read (16 of
    the first 100 dev questions did: the model wrote ``Answer:`` inside its thought line)."""
    from tao.models.install import model_is_installed, runtime_is_installed

    if not (runtime_is_installed() and model_is_installed()):
        pytest.skip("needs the embedded model (python -m tao.models.install)")
    from tao.models.local import LocalModel

    questions = load_questions("hotpotqa", eval_data.questions)[:1]
    config = eval_data.config("cot", "local", max_reply_tokens=96)
    model = _CutBeforeAnswer(LocalModel())
    (record,) = run_strategy(
        config, questions, store=open_store(), answer=answer_question, model=model
    ).records
    assert record.parse_failures == 1 and len(record.run_ids) == 2
    assert record.answer is not None and record.status == "finished"


def test_only_results_whose_reading_changed_stop_resuming(eval_data: EvalData) -> None:
    """CoT's retry, and the wiki's volatile tools (Act, ReAct and the combinations built on
    ReAct), ReAct→CoT-SC backing off from forced answers: their old files would mix two
    behaviours; Standard and CoT-SC still resume."""
    from tao.eval.config import STRATEGY_FORMAT

    assert eval_data.config("cot").key()["strategy_format"] == STRATEGY_FORMAT["cot"] == 2
    for strategy in ("act", "react", "cot-sc-react"):
        assert eval_data.config(strategy).key()["strategy_format"] == 2
    assert eval_data.config("react-cot-sc").key()["strategy_format"] == 3
    for strategy in ("standard", "cot-sc"):
        assert "strategy_format" not in eval_data.config(strategy).key()
