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


def test_the_grammar_keeps_a_path_argument_free_of_glued_text(tmp_path: Path) -> None:
    """``read_file[poem.txt, line=2]`` names no file: a tool of one path parameter takes it by
    name or bare, and a bare path cannot hold ``,``, ``=`` or ``:``. A tool whose one
    parameter is no path keeps its free argument (a search may hold commas)."""
    tools = [*file_tools(tmp_path), *write_tools(tmp_path), calculator_tool()]
    paths = [t.name for t in tools if len(t.param_names) == 1 and t.path_params]
    assert sorted(paths) == ["delete_file", "list_files", "read_file"]
    grammar = react_grammar(
        get_labels("en"),
        [t.name for t in tools],
        schemas={t.name: t.schema for t in tools},
        paths=paths,
    )
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    read_rule = next(r for r in rules["action"].split(" | ") if r.startswith('"read_file['))
    assert rules[read_rule.split()[1]] == '"path=" qstr | path-text'
    assert rules["path-text"] == "[^\\n\\],=:]{0,200}"
    assert rules["tool"] == '"calculator" | "finish"'  # free argument: tool "[" argument "]"
    pytest.importorskip("llama_cpp")
    check_grammar(grammar)


def test_a_run_on_a_grammar_backend_gets_the_path_rules(tmp_path: Path) -> None:
    """The loop's setup hands the path tools to the grammar (what the embedded model gets)."""
    from tao import Agent
    from tao.models.base import ModelReply, ModelRequest

    seen: list[str] = []

    class GrammarModel:
        name = "grammar-test"
        supports_stop = supports_grammar = True
        supports_tools = False

        def complete(self, request: ModelRequest, on_text: object = None) -> ModelReply:
            seen.append(request.grammar or "")
            return ModelReply(text="Thought: done.\nAction: finish[ok]")

        async def acomplete(self, request: ModelRequest, on_text: object = None) -> ModelReply:
            return self.complete(request)

    agent = Agent(GrammarModel(), file_tools(tmp_path), record=False)  # type: ignore[arg-type]
    assert agent.run("x").answer == "ok"
    assert '"read_file[" args-' in seen[0] and "path-text ::=" in seen[0]
