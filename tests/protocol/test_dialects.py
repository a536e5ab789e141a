"""Dialects models write by habit, in every label language (SPEC L2, L11; issue 13 item 1)."""

from __future__ import annotations

import pytest

from tao.protocol.labels import LABELS, Labels
from tao.protocol.scan import action_input_words
from tao.protocol.text import Action, FinalAnswer, ParseFailure, parse_reply

LANGS = list(LABELS)


def _lab(lang: str) -> tuple[Labels, str]:
    lab = LABELS[lang]
    return lab, action_input_words(lab)[0]


def _action(reply: str, lab: Labels) -> Action:
    parsed = parse_reply(reply, lab)
    assert isinstance(parsed, Action), parsed
    return parsed


# -- LangChain: Action + Action Input -------------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
def test_langchain_text_input_and_cut_L11_L2(lang: str) -> None:
    lab, inp = _lab(lang)
    head = f"{lab.thought}: t\n{lab.action}: search\n{inp}: Scott Derrickson"
    reply = f"{head}\n{lab.observation}: made up\n{lab.action}: finish\n{inp}: x"
    parsed = _action(reply, lab)
    assert (parsed.tool, parsed.argument, parsed.arguments) == ("search", "Scott Derrickson", None)
    assert (parsed.thought, parsed.dialect, parsed.text) == ("t", "langchain", head)


@pytest.mark.parametrize("lang", LANGS)
def test_langchain_json_input_binds_by_name_L11(lang: str) -> None:
    lab, inp = _lab(lang)
    reply = f'{lab.action}: calculator\n{inp}: {{"expression": "6*7"}}\n{lab.action}: x\n{inp}: y'
    parsed = _action(reply, lab)
    assert parsed.arguments == {"expression": "6*7"}
    assert parsed.text.endswith('"6*7"}')


def test_langchain_multiline_json_input_and_fenced_input() -> None:
    lab, inp = _lab("en")
    reply = f'Action: read_file\n{inp}: {{\n  "path": "a.txt",\n  "lines": 3\n}}\nObservation: x'
    assert _action(reply, lab).arguments == {"path": "a.txt", "lines": 3}
    fenced = f'Action: read_file\n{inp}:\n```json\n{{"path": "a.txt"}}\n```'
    assert _action(fenced, lab).arguments == {"path": "a.txt"}


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", ["finish", "Finish", "Final Answer", "final_answer"])
def test_langchain_finish_L9(lang: str, name: str) -> None:
    lab, inp = _lab(lang)
    parsed = parse_reply(f"{lab.thought}: ok\n{lab.action}: {name}\n{inp}: 395", lab)
    assert isinstance(parsed, FinalAnswer), parsed
    assert (parsed.answer, parsed.thought) == ("395", "ok")


@pytest.mark.parametrize("lang", LANGS)
def test_langchain_localised_finish_word(lang: str) -> None:
    lab, inp = _lab(lang)
    parsed = parse_reply(f"{lab.action}: {lab.answer}\n{inp}: 12", lab)
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer == "12"


def test_langchain_empty_finish_is_a_failure() -> None:
    assert isinstance(parse_reply("Action: finish\nAction Input:", LABELS["en"]), ParseFailure)


def test_langchain_labels_of_another_language_are_not_read_L8() -> None:
    parsed = parse_reply("Action: search\nAction Input: x", LABELS["sv"])
    assert isinstance(parsed, ParseFailure)


def test_langchain_numbered_and_emphasised_labels_L10() -> None:
    lab, _ = _lab("en")
    parsed = _action("**Thought 2:** t\n**Action 2:** `search`\n**Action Input 2:** NBA", lab)
    assert (parsed.tool, parsed.argument, parsed.thought) == ("search", "NBA", "t")


# -- a description is not an input ------------------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(
    ("tool", "description"),
    [("delete_file", "remove a file"), ("search", "look something up"), ("read_file", "read it")],
)
def test_description_without_input_is_a_format_reminder_L11_L4(
    lang: str, tool: str, description: str
) -> None:
    lab, inp = _lab(lang)
    parsed = parse_reply(f"{lab.thought}: t\n{lab.action}: {tool} ({description})", lab)
    assert isinstance(parsed, ParseFailure), parsed
    assert f"{lab.action}: {tool}[input]" in parsed.reason
    assert inp in parsed.reason


@pytest.mark.parametrize("lang", LANGS)
def test_description_with_input_line_is_a_call_L11(lang: str) -> None:
    lab, inp = _lab(lang)
    parsed = _action(f"{lab.action}: delete_file (remove a file)\n{inp}: notes.txt", lab)
    assert (parsed.tool, parsed.argument) == ("delete_file", "notes.txt")


@pytest.mark.parametrize(
    "reply", ["Action: calculator (2 + 3)", "Action: f (x=1)", "Action: f('a b')"]
)
def test_parenthesised_arguments_are_still_calls_L7(reply: str) -> None:
    assert _action(reply, LABELS["en"]).form == "call"


@pytest.mark.parametrize("lang", LANGS)
def test_action_line_with_no_input_is_a_failure_L4(lang: str) -> None:
    lab, _ = _lab(lang)
    parsed = parse_reply(f"{lab.thought}: t\n{lab.action}: search\n{lab.thought}: NBA", lab)
    assert isinstance(parsed, ParseFailure)
    assert "tool[argument]" in parsed.reason


# -- JSON blob -------------------------------------------------------------------------------

BLOB = '{"action": "search", "action_input": "Scott Derrickson"}'


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(
    "wrap",
    [
        "```json\n{}\n```",
        "```\n{}\n```",
        "{}",
        "ACTION:\n```json\n{}\n```",
        "  ```JSON\n  {}\n  ```",
    ],
)
def test_json_blob_fenced_or_bare_L11_L2(lang: str, wrap: str) -> None:
    lab, _ = _lab(lang)
    body = wrap.replace("ACTION", lab.action).replace("{}", BLOB)
    reply = f"{lab.thought}: t\n{body}\n{lab.observation}: made up\n{BLOB}"
    parsed = _action(reply, lab)
    assert (parsed.tool, parsed.argument, parsed.dialect) == ("search", "Scott Derrickson", "json")
    assert parsed.thought == "t"
    assert parsed.text == f"{lab.thought}: t\n{body}".rstrip()


@pytest.mark.parametrize(
    "name", ["Final Answer", "final answer", "FINAL ANSWER", "finish", "Finish"]
)
def test_json_blob_final_answer_L9(name: str) -> None:
    parsed = parse_reply(f'```json\n{{"action": "{name}", "action_input": "4"}}\n```', LABELS["en"])
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer == "4"


def test_json_blob_object_input_binds_by_name_and_key_order_does_not_matter() -> None:
    parsed = _action(
        '{"action_input": {"expression": "6*7"}, "action": "calculator"}', LABELS["en"]
    )
    assert (parsed.tool, parsed.arguments) == ("calculator", {"expression": "6*7"})


def test_json_blob_with_a_thought_key_and_a_name_arguments_blob() -> None:
    en = LABELS["en"]
    parsed = _action('{"thought": "t", "action": "search", "action_input": "x"}', en)
    assert (parsed.tool, parsed.argument) == ("search", "x")
    named = _action('```json\n{"name": "search", "arguments": {"query": "x"}}\n```', en)
    assert (named.tool, named.arguments) == ("search", {"query": "x"})


def test_other_json_in_a_thought_is_not_a_call() -> None:
    parsed = parse_reply('Thought: the user sent {"name": "Ada", "age": 36}.', LABELS["en"])
    assert isinstance(parsed, ParseFailure)


def test_final_answer_label_before_a_blob_wins() -> None:
    parsed = parse_reply(f"Final Answer: 7\n{BLOB}", LABELS["en"])
    assert isinstance(parsed, FinalAnswer)  # the answer may hold JSON (typed answers, L13)
    assert parsed.answer.startswith("7\n")


def test_bracket_action_before_a_blob_wins_and_the_blob_is_cut() -> None:
    parsed = _action(f"Action: calculator[1+1]\n{BLOB}", LABELS["en"])
    assert (parsed.tool, parsed.text) == ("calculator", "Action: calculator[1+1]")


# -- Hermes / Qwen <tool_call> ---------------------------------------------------------------


_TAGGED = [
    (
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6*7"}}\n</tool_call>',
        '\n<tool_call>{"name": "x", "arguments": {}}</tool_call>',
        "hermes",
    ),
    ('<function=calculator>{"expression": "6*7"}</function>', "\n{observation}: made up", "llama"),
]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(("call", "after", "dialect"), _TAGGED, ids=["hermes", "llama"])
def test_tagged_calls_L11_L2(lang: str, call: str, after: str, dialect: str) -> None:
    lab, _ = _lab(lang)
    parsed = _action(
        f"{lab.thought}: t\n{call}{after.replace('{observation}', lab.observation)}", lab
    )
    assert (parsed.tool, parsed.arguments, parsed.dialect) == (
        "calculator",
        {"expression": "6*7"},
        dialect,
    )
    assert (parsed.thought, parsed.text) == ("t", f"{lab.thought}: t\n{call}")


def test_tool_call_with_string_arguments_and_no_closing_tag() -> None:
    parsed = _action('<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}', LABELS["en"])
    assert parsed.arguments == {"a": 1}


@pytest.mark.parametrize(
    ("arguments", "answer"),
    [('{"answer": "42"}', "42"), ('{"answer": 42}', "42"), ('{"answer": {"n": 1}}', '{"n": 1}')],
)
def test_tool_call_finish_L9(arguments: str, answer: str) -> None:
    reply = f'<tool_call>{{"name": "finish", "arguments": {arguments}}}</tool_call>'
    parsed = parse_reply(reply, LABELS["en"])
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer == answer


@pytest.mark.parametrize(
    "reply",
    [
        "<tool_call>not json</tool_call>",
        '<tool_call>{"arguments": {}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": [1]}</tool_call>',
        '<tool_call>{"name": "finish", "arguments": {}}</tool_call>',
    ],
)
def test_bad_tool_call_is_a_failure_with_a_reason_L4(reply: str) -> None:
    parsed = parse_reply(reply, LABELS["en"])
    assert isinstance(parsed, ParseFailure)
    assert parsed.reason


def test_tool_call_inside_thinking_is_not_a_call_L10() -> None:
    reply = '<think><tool_call>{"name": "f", "arguments": {}}</tool_call></think>No call.'
    assert isinstance(parse_reply(reply, LABELS["en"]), ParseFailure)


def test_json_blob_with_langchain_tool_and_tool_input_keys_L11() -> None:
    en = LABELS["en"]
    parsed = _action('Thought: t\n{"tool": "calculator", "tool_input": {"expression": "6*7"}}', en)
    assert (parsed.tool, parsed.arguments, parsed.thought) == (
        "calculator",
        {"expression": "6*7"},
        "t",
    )
    final = parse_reply('{"tool": "Final Answer", "tool_input": "42"}', en)
    assert isinstance(final, FinalAnswer) and final.answer == "42"
    # "tool" alone is data, not a call (a typed answer may well have such a field)
    assert isinstance(parse_reply('{"tool": "hammer", "count": 3}', en), ParseFailure)


# -- Llama 3.1 <function=tool>{...}</function> --------------------------------------------------


def test_function_tag_without_parameters_finish_and_order() -> None:
    en = LABELS["en"]
    assert _action("<function=now></function>", en).arguments == {}
    final = parse_reply('<function=finish>{"answer": "Paris"}</function>', en)
    assert isinstance(final, FinalAnswer) and final.answer == "Paris"
    later_tag = '<tool_call>{"name": "lookup", "arguments": {"keyword": "b"}}</tool_call>'
    first = _action(f'<function=search>{{"entity": "a"}}</function> {later_tag}', en)
    assert first.tool == "search"  # whichever call comes first wins, across dialects
    assert _action(f'{later_tag} <function=search>{{"entity": "a"}}</function>', en).tool == (
        "lookup"
    )


@pytest.mark.parametrize(
    "reply", ['<function=calc>{"expression": 6*7}</function>', "<function=calc>[1]</function>"]
)
def test_function_tag_with_a_bad_body_is_a_failure_with_a_reason_L4(reply: str) -> None:
    parsed = parse_reply(reply, LABELS["en"])
    assert isinstance(parsed, ParseFailure)
    assert "<function=calc> must be a JSON object" in parsed.reason


# -- JSON-object arguments in tao's own forms -------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
def test_bracket_json_object_binds_by_name_L11(lang: str) -> None:
    lab, _ = _lab(lang)
    parsed = _action(f'{lab.action}: calculator[{{"expression": "6*7"}}]', lab)
    assert (parsed.argument, parsed.arguments) == ('{"expression": "6*7"}', {"expression": "6*7"})


@pytest.mark.parametrize(
    "reply",
    [
        "Action: search[Scott Derrickson]",
        "Action: search[[1, 2]]",
        "Action: f(a=1)",
        "Action: f[{bad}]",
    ],
)
def test_text_arguments_carry_no_object(reply: str) -> None:
    assert _action(reply, LABELS["en"]).arguments is None


def test_call_form_json_object_and_finish_json_object() -> None:
    en = LABELS["en"]
    assert _action('Action: calculator({"expression": "1"})', en).arguments == {"expression": "1"}
    parsed = parse_reply('Action: finish[{"answer": "12 of 47"}]', en)
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer == "12 of 47"
    typed = parse_reply('Action: finish[{"n": 12, "of": 47}]', en)
    assert isinstance(typed, FinalAnswer)
    assert typed.answer == '{"n": 12, "of": 47}'


@pytest.mark.parametrize(
    "reply",
    ["Action: search (Paris)", "Action: delete_file (cleanup, today!)", "Action: f  (don't)"],
)
def test_any_prose_in_spaced_parentheses_is_a_description_L11(reply: str) -> None:
    parsed = parse_reply(reply, LABELS["en"])
    assert isinstance(parsed, ParseFailure)
    assert "description" in parsed.reason


def test_unspaced_call_form_keeps_its_text_argument_L7() -> None:
    parsed = _action("Action: search(Scott Derrickson)", LABELS["en"])
    assert (parsed.form, parsed.argument) == ("call", "Scott Derrickson")


@pytest.mark.parametrize("lang", ["tr", "ar", "ja", "sv"])
def test_langchain_accepts_the_english_input_label_after_a_localised_action(lang: str) -> None:
    lab = LABELS[lang]
    parsed = _action(f"{lab.action}: search\nAction Input: x", lab)
    assert (parsed.tool, parsed.argument) == ("search", "x")
