"""``tool[name="value"]`` and ``tool[name=value]`` bind by parameter name (issue 30, L7, L14)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tao.protocol.grammar import check_grammar, react_grammar
from tao.protocol.labels import get_labels
from tao.tools.base import ArgumentError
from tao.tools.calc import calculator_tool
from tao.tools.files import file_tools
from tao.tools.write import write_tools


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('path="notes.txt"', "notes.txt"),
        ("path=notes.txt", "notes.txt"),
        (" path = 'notes.txt' ", "notes.txt"),
        ("notes.txt", "notes.txt"),
        ("x=notes.txt", "x=notes.txt"),  # not a parameter: the text is the value
    ],
)
def test_a_one_parameter_tool_binds_its_name_or_the_plain_value(
    tmp_path: Path, text: str, expected: str
) -> None:
    read_file = file_tools(tmp_path)[0]
    assert read_file.bind(text) == {"path": expected}


def test_a_value_holding_equals_signs_still_binds_whole() -> None:
    calculator = calculator_tool()
    assert calculator.bind("x=2+3") == {"expression": "x=2+3"}
    assert calculator.bind("expression=2+3") == {"expression": "2+3"}
    assert calculator.bind("expression==3") == {"expression": "expression==3"}


@pytest.mark.parametrize(
    "text",
    ['path="a.txt", content="x, y"', "path=a.txt, content=x, y", 'content="x, y", path="a.txt"'],
)
def test_several_named_arguments_bind_quoted_or_not(tmp_path: Path, text: str) -> None:
    write_file = write_tools(tmp_path)[0]
    assert write_file.bind(text) == {"path": "a.txt", "content": "x, y"}


def test_positional_text_for_two_parameters_is_refused_with_the_call_to_write(
    tmp_path: Path,
) -> None:
    write_file = write_tools(tmp_path)[0]
    with pytest.raises(ArgumentError) as caught:
        write_file.bind("count.txt, 3")
    assert 'call it as write_file[path="count.txt", content="3"]' in str(caught.value)


def test_named_binding_is_linear_L14(tmp_path: Path) -> None:
    """Ten times the text takes about ten times as long (well under a hundred)."""
    write_file = write_tools(tmp_path)[0]

    def seconds(repeat: int) -> float:
        text = "path=a, content=" + "b=, " * repeat
        began = time.perf_counter()
        assert write_file.bind(text)["path"] == "a"
        return time.perf_counter() - began

    small = min(seconds(25_000) for _ in range(3))
    assert min(seconds(250_000) for _ in range(3)) < 30 * small + 0.05


def test_the_grammar_makes_a_tool_of_several_parameters_take_them_by_name(tmp_path: Path) -> None:
    tools = [*file_tools(tmp_path), *write_tools(tmp_path)]
    grammar = react_grammar(
        get_labels("en"), [t.name for t in tools], schemas={t.name: t.schema for t in tools}
    )
    assert '"write_file[" args-0 "]"' in grammar
    assert 'args-0 ::= "path=" qstr ", content=" qstr' in grammar
    pytest.importorskip("llama_cpp")
    check_grammar(grammar)
