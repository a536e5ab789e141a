"""The parser is linear in the reply's length and total on any text (SPEC L4, L14; issue 12).

Timing: every pathological reply of 1 MB parses in under 50 ms (best of three runs,
time.perf_counter, so a busy CI machine does not fail the test by chance). Properties:
for arbitrary text in all five label languages, and for protocol-shaped text in every
dialect, ``parse_reply`` never raises and returns one of its three shapes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tao.protocol.labels import LABELS, Labels
from tao.protocol.native import cut_made_up
from tao.protocol.scan import action_input_words
from tao.protocol.text import Action, FinalAnswer, ParseFailure, cut_at_stop, parse_reply

MB = 1_000_000
LIMIT_S = 0.050


def _fill(unit: str, size: int = MB) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _best_of_three(run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _units(lab: Labels) -> list[str]:
    inp = action_input_words(lab)[0]
    return [
        f"{lab.thought}: ",
        f"{lab.action}: ",
        f"{lab.action}: a[",
        f"{lab.action}: a[\n",
        f"{lab.action}: a (",
        f"{lab.action}: a (b c)\n",
        f"{lab.action}: a\n{inp}: ",
        f"{lab.observation}: ",
        f"{lab.answer}:",
        f"x {lab.answer}: ",
        f"\n{lab.thought}",
        f"**{lab.action} 1**: ",
        f"{lab.action}： ",
    ]


PATHOLOGICAL = [
    " ",
    "\n",
    "\t \n",
    "<think>",
    "</think>",
    "<think></think>",
    "<thinking>x",
    "[",
    "]",
    "(",
    "*",
    "* ",
    "#",
    "`",
    "{",
    '{"action": ',
    '{"action": "a", "action_input": "b"}',
    "<tool_call>",
    '<tool_call>{"name": ',
    "<function=a>",
    "<function=a>{",
    "<function=a></function>",
    '{"tool": "a", "tool_input": ',
    '{"tool_input": ',
    "Thought: *Action:* a[ ( <think> Observation: \n",
    "Action 1",
    ":",
    "```json\n",
]
CASES = [("en", unit) for unit in PATHOLOGICAL] + [
    (lang, unit) for lang, lab in LABELS.items() for unit in _units(lab)
]


@pytest.mark.parametrize(("lang", "unit"), CASES, ids=[f"{lang}-{unit!r}" for lang, unit in CASES])
def test_one_megabyte_of_a_repeated_unit_parses_in_50_ms_L14(lang: str, unit: str) -> None:
    text, lab = _fill(unit), LABELS[lang]
    assert isinstance(parse_reply(text, lab), Action | FinalAnswer | ParseFailure)
    assert _best_of_three(lambda: parse_reply(text, lab)) < LIMIT_S


@pytest.mark.parametrize(
    "text",
    [
        "Thought: t\n" + " " * MB + "Action: search[x]",
        "Action: search[" + "\n" * MB + "x]",
        "Action: a[\n" + "x\n" * (MB // 2) + "]",
        "Thought: " + "a" * MB + "\nAction: search[x]",
        "Action: search\nAction Input: " + "x " * (MB // 2),
        "```json\n" + '{"action": "a", "action_input": "' + "x" * MB + '"}\n```',
        "<tool_call>" + '{"name": "a", "arguments": {"q": "' + "x" * MB + '"}}</tool_call>',
        "<think>" * (MB // 14) + "</think>" * (MB // 16) + "Action: a[b]",
    ],
    ids=[
        "spaces",
        "newlines-arg",
        "continued-arg",
        "long-thought",
        "long-input",
        "blob",
        "tag",
        "tags",
    ],
)
def test_one_megabyte_with_a_real_call_parses_in_50_ms_L14(text: str) -> None:
    assert not isinstance(parse_reply(text, LABELS["en"]), ParseFailure)
    assert _best_of_three(lambda: parse_reply(text, LABELS["en"])) < LIMIT_S


def test_time_grows_linearly_not_quadratically_L14() -> None:
    unit = "Action: a (b c)\nThought: "
    small = _best_of_three(lambda: parse_reply(_fill(unit, MB // 8), LABELS["en"]))
    large = _best_of_three(lambda: parse_reply(_fill(unit, MB), LABELS["en"]))
    assert large < max(16 * small, 0.010)  # 8x the text: far from the 64x of a quadratic


@pytest.mark.parametrize("lang", list(LABELS))
def test_stop_cut_and_native_cut_are_fast_L3_L14(lang: str) -> None:
    lab = LABELS[lang]
    text = _fill(f"{lab.observation}X {lab.answer}X ")
    assert _best_of_three(lambda: cut_at_stop(text, lab.stop)) < LIMIT_S
    assert _best_of_three(lambda: cut_made_up(text, lab, has_calls=True)) < LIMIT_S


def test_a_valid_call_after_many_prose_mentions_still_parses() -> None:
    reply = "Thought: " + "the action plan and the final answer, " * 500 + "\nAction: search[x]"
    parsed = parse_reply(reply, LABELS["en"])
    assert isinstance(parsed, Action)
    assert (parsed.tool, parsed.argument) == ("search", "x")


def test_a_flood_of_malformed_labels_is_a_format_reminder_not_a_hang_L4() -> None:
    parsed = parse_reply("Action: a\n" * 200_000, LABELS["en"])
    assert isinstance(parsed, ParseFailure)
    assert "Action: tool[argument]" in parsed.reason


# -- properties ---------------------------------------------------------------------------------


def _tokens(lab: Labels) -> list[str]:
    inp = action_input_words(lab)[0]
    words = [lab.thought, lab.action, lab.observation, lab.answer, *lab.answer_aliases, inp]
    return [
        *words,
        *(f"{w}:" for w in words),
        *(f"{w}：" for w in words),
        *"abcXYZ 0123456789[]()=\"',:：*_#`~>\n\t<>/{}\\",
        "finish",
        "Final Answer",
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        '{"action": ',
        '"action_input": ',
        '{"name": ',
        '"arguments": ',
        "```json\n",
        "```",
        " 3",
        "**",
        "\u0130",
    ]


@st.composite
def protocolish(draw: st.DrawFn) -> tuple[str, Labels]:
    lab = draw(st.sampled_from(list(LABELS.values())))
    parts = draw(st.lists(st.sampled_from(_tokens(lab)), max_size=80))
    return "".join(parts), lab


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=protocolish())
def test_protocol_shaped_text_never_raises_L4(case: tuple[str, Labels]) -> None:
    text, lab = case
    parsed = parse_reply(text, lab)
    assert isinstance(parsed, Action | FinalAnswer | ParseFailure)
    assert len(parsed.text) <= len(text)
    if isinstance(parsed, Action):
        assert parsed.tool
        assert parsed.arguments is None or isinstance(parsed.arguments, dict)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=2000), lang=st.sampled_from(list(LABELS)))
def test_arbitrary_text_never_raises_in_any_language_L4(text: str, lang: str) -> None:
    parsed = parse_reply(text, LABELS[lang])
    assert isinstance(parsed, Action | FinalAnswer | ParseFailure)
    assert len(parsed.text) <= len(text)


_names = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True).filter(
    lambda n: n not in {"finish", "final_answer"}
)
_args = st.text(st.characters(codec="utf-8", exclude_characters="[]\n\r<>`{}"), max_size=30).map(
    str.strip
)


@settings(max_examples=300, deadline=None)
@given(
    lang=st.sampled_from(list(LABELS)),
    dialect=st.sampled_from(["react", "langchain", "json", "hermes"]),
    tool=_names,
    argument=_args.filter(lambda a: a.strip() != "" and '"' not in a and "\\" not in a),
    junk=st.sampled_from(["", "\n", "\n\n"]),
)
def test_whatever_follows_the_first_action_is_cut_in_every_dialect_L2(
    lang: str, dialect: str, tool: str, argument: str, junk: str
) -> None:
    lab = LABELS[lang]
    inp = action_input_words(lab)[0]
    call = {
        "react": f"{lab.action}: {tool}[{argument}]",
        "langchain": f"{lab.action}: {tool}\n{inp}: {argument}",
        "json": f'```json\n{{"action": "{tool}", "action_input": "{argument}"}}\n```',
        "hermes": f'<tool_call>{{"name": "{tool}", "arguments": {{"q": "{argument}"}}}}'
        "</tool_call>",
    }[dialect]
    head = f"{lab.thought}: t\n{call}"
    after = f"{junk}\n{lab.observation}: made up\n{lab.action}: other[x]\n{lab.answer}: no"
    parsed = parse_reply(head + after, lab)
    assert isinstance(parsed, Action), parsed
    assert (parsed.tool, parsed.dialect, parsed.text) == (tool, dialect, head)
    if dialect == "hermes":
        assert parsed.arguments == {"q": argument}
    else:
        assert parsed.argument == argument
