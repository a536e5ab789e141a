"""The tool-call grammar of ``tao serve`` (SPEC L7, M5; issue 30 item 7): what it lets the
embedded model write, checked token by token by llama.cpp's own grammar sampler over the
embedded model's real vocabulary (loaded without its weights)."""

from __future__ import annotations

import ctypes
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from tao.models.install import default_model_path, model_is_installed, runtime_is_installed
from tao.protocol.hermes import call_schema, tool_call_grammar
from tao.state.jsontypes import JSON

pytestmark = pytest.mark.skipif(
    not (runtime_is_installed() and model_is_installed()),
    reason="needs llama-cpp-python and the embedded model's vocabulary (scripts/setup.sh)",
)

CALCULATOR: JSON = {
    "type": "object",
    "properties": {"expression": {"type": "string"}},
    "required": ["expression"],
}
WRITE: JSON = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}
TOOLS = {"calculator": CALCULATOR, "write_file": WRITE}


@pytest.fixture(scope="module")
def vocab() -> Iterator[Any]:
    import llama_cpp

    llama = llama_cpp.Llama(str(default_model_path()), vocab_only=True, verbose=False)
    yield llama
    llama.close()


def accepts(llama: Any, grammar: str, text: str) -> bool:
    """Whether the grammar lets the model write ``text`` (as the model's tokens) and stop."""
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(
        llama._model.vocab, grammar.encode("utf-8"), b"root"
    )
    assert sampler, "llama.cpp refused the grammar"
    try:
        tokens = llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        for token in [*tokens, llama.token_eos()]:
            cell = llama_cpp.llama_token_data(token, 0.0, 0.0)
            one = llama_cpp.llama_token_data_array(ctypes.pointer(cell), 1, -1, False)
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(one))
            if cell.logit == -math.inf:
                return False
            if token != llama.token_eos():
                llama_cpp.llama_sampler_accept(sampler, token)
        return True
    finally:
        llama_cpp.llama_sampler_free(sampler)


CALL = '{"name": "calculator", "arguments": {"expression": "17 * 23 + 4"}}'
CLEAN = [
    CALL,
    f"<tool_call>\n{CALL}\n</tool_call>",
    '{"name": "write_file", "arguments": {"path": "count.txt", "content": "3\\n"}}',
    f"Let me compute it.\n<tool_call>\n{CALL}\n</tool_call>",
    "The answer is 395.",
    "Sure: a joke about cats. <b>Why?</b> a < b, {braces} and ```fences``` are fine.",
    'Sets { "a": 1 }, << and {{x}}, {"n": 2} and <tools> are prose.',
    # text and then the call, bare: the shape the embedded model writes (issue 30)
    f"Let me compute it. {CALL}",
    f"I will use the calculator.\n{CALL}",
]
MESSY = [
    # the shapes the embedded model wrote before the grammar held it (issue 30)
    f"{CALL} // This is the JSON object representing the function call",
    f"<tool_call>\n{CALL}\n</tool_call>\nThe result will be 395.",
    f"Let me compute it. {CALL} Done.",
    f"Let me compute it. {CALL}\n{CALL}",
    # a call's JSON hidden in prose: the embedded model wrote the first one to get past
    # a grammar that banned only '{"name"' exactly
    'Result: 405.\n{"name ": "calculator", "arguments": {"expression": "17 * 23 + 4"}}',
    'Say { "name": "calculator" } is a call.',
    'Say {\n  "name": "calculator" } is a call.',
    'Say {{"name": "calculator"}} is a call.',
    'Say { {"name": "calculator"} is a call.',
    'Say {"names": 1} or { "name ": 2}.',
    "Text with a tag <t<tool_call> inside.",
    "Text with a tag <<tool_call> inside.",
    f"Let me compute it.\n<tool_call>\n{CALL}\n</tool_call>\n<tool_call>\n{CALL}\n</tool_call>",
    "Text with a stray <tool_call> tag.",
    f" {CALL}",
    f"```json\n{CALL}\n```",
    # calls the request does not allow
    '{"name": "shell", "arguments": {"command": "rm -rf /"}}',
    '{"name": "calculator", "arguments": {}}',
    '{"name": "calculator", "arguments": {"expression": 17}}',
    '{"name": "write_file", "arguments": {"content": "3", "path": "count.txt"}}',
    '{"name": "calculator", "arguments": {"expression": "a\nb"}}',
    "",
]


@pytest.mark.parametrize("text", CLEAN)
def test_a_reply_is_one_clean_call_or_plain_text_L7(vocab: Any, text: str) -> None:
    assert accepts(vocab, tool_call_grammar(TOOLS), text)


@pytest.mark.parametrize("text", MESSY)
def test_prose_around_a_call_and_calls_outside_the_schemas_cannot_be_written_L7(
    vocab: Any, text: str
) -> None:
    assert not accepts(vocab, tool_call_grammar(TOOLS), text)


def test_a_required_call_leaves_no_room_for_text_L7(vocab: Any) -> None:
    grammar = tool_call_grammar(TOOLS, required=True)
    assert accepts(vocab, grammar, CALL)
    assert not accepts(vocab, grammar, "The answer is 395.")


def test_schemas_with_definitions_and_ones_llama_cpp_cannot_convert_still_give_a_grammar(
    vocab: Any,
) -> None:
    """Pydantic writes ``$defs`` with ``#/$defs/...`` references: they resolve from the
    call's root. A schema the converter refuses (a dangling reference) leaves that tool
    taking any JSON object, rather than failing the request."""
    point = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    moved = {
        "type": "object",
        "properties": {"to": {"$ref": "#/$defs/Point"}},
        "required": ["to"],
        "$defs": {"Point": point},
    }
    grammar = tool_call_grammar({"move": moved})
    assert accepts(vocab, grammar, '{"name": "move", "arguments": {"to": {"x": 3}}}')
    assert not accepts(vocab, grammar, '{"name": "move", "arguments": {"to": {"y": 3}}}')
    assert json.dumps(call_schema({"move": moved})).count("$defs") == 2  # moved to the root

    broken = {"type": "object", "properties": {"to": {"$ref": "#/nowhere"}}}
    grammar = tool_call_grammar({"move": broken, "calculator": CALCULATOR})
    assert accepts(vocab, grammar, '{"name": "move", "arguments": {"anything": [1]}}')
    assert not accepts(vocab, grammar, '{"name": "jump", "arguments": {}}')
