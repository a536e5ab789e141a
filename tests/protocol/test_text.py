"""The text protocol parser: L2 (cut at first Action), L4 (never raises), L7, L9, L10."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tao.protocol.labels import LABELS, Labels
from tao.protocol.scan import MAX_THINK_BLOCKS
from tao.protocol.text import Action, FinalAnswer, ParseFailure, cut_at_stop, parse_reply

EN = LABELS["en"]


def test_first_action_wins_and_made_up_observation_is_cut_L2() -> None:
    reply = (
        "Thought: I should compute.\nAction: calculator[17 * 23 + 4]\n"
        "Observation: 395\nThought: done\nAction: finish[395]"
    )
    parsed = parse_reply(reply, EN)
    assert parsed == Action(
        "I should compute.",
        "calculator",
        "17 * 23 + 4",
        "bracket",
        "Thought: I should compute.\nAction: calculator[17 * 23 + 4]",
    )


def test_argument_runs_to_last_bracket_on_the_line_L7() -> None:
    parsed = parse_reply("Action: finish[the list [1, 2] has [two] items]", EN)
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer == "the list [1, 2] has [two] items"


def test_call_form_with_keywords_L7() -> None:
    reply = 'Tanke: Nu behöver jag äldre.\nHandling: sok_arenden(status="öppen", aldre_an_dagar=7)'
    parsed = parse_reply(reply, LABELS["sv"])
    assert isinstance(parsed, Action)
    assert (parsed.tool, parsed.form) == ("sok_arenden", "call")
    assert parsed.argument == 'status="öppen", aldre_an_dagar=7'
    assert parsed.thought == "Nu behöver jag äldre."


@pytest.mark.parametrize(
    ("lang", "reply", "answer"),
    [
        ("en", "Thought: ok\nFinal Answer: 395", "395"),
        ("tr", "Düşünce: tamam\nCevap: 395", "395"),
        ("ar", "الفكرة: حسنًا\nالإجابة: 395", "395"),
        ("ja", "考え：よし\n答え：395", "395"),
        ("ja", "考え: よし\n答え: 395", "395"),
        # the other ways models write "final answer" in each language
        ("en", "Thought: ok\nFinal answer: 395", "395"),
        ("tr", "Düşünce: tamam\nNihai Cevap: 395", "395"),
        ("tr", "Düşünce: tamam\nSon cevap: 395", "395"),
        ("ar", "الفكرة: حسنًا\nالإجابة النهائية: 395", "395"),
        ("ar", "الفكرة: حسنًا\nالجواب النهائي: 395", "395"),
        ("ja", "考え: よし\n最終的な答え: 395", "395"),
        ("ja", "考え：よし\n回答：395", "395"),
        ("sv", "Tanke: klart\nSlutgiltigt svar: 395", "395"),
        ("sv", "Tanke: klart\nSlutligt svar: 395", "395"),
        (
            "sv",
            "Tanke: Jag har vad jag behöver.\nSvar: 12 av 47 öppna ärenden.",
            "12 av 47 öppna ärenden.",
        ),
    ],
)
def test_final_answer_label_in_every_language_L8_L9(lang: str, reply: str, answer: str) -> None:
    parsed = parse_reply(reply, LABELS[lang])
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer == answer


@pytest.mark.parametrize(
    ("lang", "reply"),
    [
        ("en", "Thought: x\nAction: calculator[12*12]"),
        ("tr", "Düşünce: x\nEylem: calculator[12*12]"),
        ("ar", "الفكرة: x\nالإجراء: calculator[12*12]"),
        ("ja", "考え：x\n行動：calculator[12*12]"),
        ("sv", "Tanke: x\nHandling: calculator[12*12]"),
    ],
)
def test_action_label_in_every_language_L8(lang: str, reply: str) -> None:
    parsed = parse_reply(reply, LABELS[lang])
    assert isinstance(parsed, Action)
    assert (parsed.thought, parsed.tool, parsed.argument) == ("x", "calculator", "12*12")


def test_labels_of_another_language_are_not_actions_L8() -> None:
    parsed = parse_reply("Thought: x\nAction: calculator[1]", LABELS["sv"])
    assert isinstance(parsed, ParseFailure)


@pytest.mark.parametrize(
    "reply",
    [
        "Thought 3: numbered\nAction 3: Search[Scott Derrickson]",
        "**Thought:** bold\n**Action:** Search[Scott Derrickson]",
        "**Thought**: bold\n**Action**: `Search[Scott Derrickson]`",
        "## Thought\n\n   Thought:   spaced   \n\n   Action:   Search[Scott Derrickson]   \n",
        "<think>I could write Action: calculator[1+1] here.</think>\n"
        "Thought: t\nAction: Search[Scott Derrickson]",
        "Thought: same line. Action: Search[Scott Derrickson]",
    ],
)
def test_tolerated_decorations_L10(reply: str) -> None:
    parsed = parse_reply(reply, EN)
    assert isinstance(parsed, Action), parsed
    assert (parsed.tool, parsed.argument) == ("Search", "Scott Derrickson")


def test_action_inside_think_block_is_not_an_action_L10() -> None:
    parsed = parse_reply("<think>Action: calculator[1+1]</think>\nI am not sure.", EN)
    assert isinstance(parsed, ParseFailure)
    assert "calculator" not in parsed.text


def test_unclosed_think_block_hides_everything_after_it_L10() -> None:
    assert isinstance(parse_reply("<think>Action: calculator[1]", EN), ParseFailure)


@pytest.mark.parametrize("blocks", [3, MAX_THINK_BLOCKS + 1])
def test_blocks_hide_their_actions_however_many_a_reply_holds_L10_L14(blocks: int) -> None:
    """Past MAX_THINK_BLOCKS the reply is read from its last closing tag on (linear at C
    speed); below it block by block. Either way an action in a block stays hidden and the
    action after the last block is read."""
    inside = "<think>Action: calculator[1+1]</think>"
    parsed = parse_reply(inside * blocks + "\nAction: Search[Scott Derrickson]", EN)
    assert isinstance(parsed, Action), parsed
    assert (parsed.tool, parsed.argument) == ("Search", "Scott Derrickson")
    hidden = parse_reply(inside * blocks + "<THINK>Action: Search[x]", EN)
    assert isinstance(hidden, ParseFailure)


def test_reply_with_neither_action_nor_answer_is_a_failure_not_an_answer_L9() -> None:
    parsed = parse_reply("The answer is obviously 42.", EN)
    assert isinstance(parsed, ParseFailure)
    assert "no Action line" in parsed.reason


def test_malformed_action_line_keeps_the_line_and_explains_L4() -> None:
    parsed = parse_reply("Thought: x\nAction: search Scott\nObservation: invented", EN)
    assert isinstance(parsed, ParseFailure)
    assert parsed.text == "Thought: x\nAction: search Scott"
    assert "tool[argument]" in parsed.reason


def test_empty_finish_is_a_failure_L9() -> None:
    assert isinstance(parse_reply("Action: finish[]", EN), ParseFailure)


def test_finish_call_form_is_unquoted() -> None:
    parsed = parse_reply('Action: finish(answer="12 of 47")', EN)
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer == "12 of 47"


def test_multiline_argument_closes_on_a_later_line() -> None:
    parsed = parse_reply("Action: finish[line one\nline two]\nObservation: x", EN)
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer == "line one\nline two"


def test_whichever_comes_first_wins_between_action_and_answer() -> None:
    first_answer = parse_reply("Final Answer: 7\nAction: calculator[1]", EN)
    first_action = parse_reply("Action: calculator[1]\nFinal Answer: 7", EN)
    assert isinstance(first_answer, FinalAnswer)
    assert isinstance(first_action, Action)


def test_final_answer_stops_at_a_made_up_observation_L2() -> None:
    parsed = parse_reply("Final Answer: 395\nObservation: you are right", EN)
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer == "395"


def test_client_side_stop_cut_L3() -> None:
    text = "Thought: a\nAction: calculator[1]\nObservation: 1\nThought: b"
    assert cut_at_stop(text, EN.stop) == "Thought: a\nAction: calculator[1]\n"
    assert cut_at_stop("考え：a\n行動：x[1]\n観察：2", LABELS["ja"].stop) == "考え：a\n行動：x[1]\n"


labels_strategy = st.sampled_from(list(LABELS.values()))
protocolish = st.lists(
    st.sampled_from(
        [
            *"abcXYZ 0123456789[]()=\"',:：*_#`\n\t<>/",
            "Thought",
            "Action",
            "Observation",
            "Final Answer",
            "finish",
            "<think>",
            "</think>",
            "Svar",
            "行動",
            "الإجراء",
            "Eylem",
        ]
    ),
    max_size=120,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(st.text(max_size=500), protocolish), labels=labels_strategy)
def test_parser_never_raises_on_any_text_L4(text: str, labels: Labels) -> None:
    parsed = parse_reply(text, labels)
    assert isinstance(parsed, Action | FinalAnswer | ParseFailure)
    # What enters the transcript is never longer than what the model wrote.
    assert len(parsed.text) <= len(text)
