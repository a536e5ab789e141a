"""Tool sets by name and resolve_tools (SPEC T2): the sets of the CLI contract, in order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tao.tools
from tao.errors import ConfigError, ToolDefinitionError, UnknownToolSetError
from tao.tools import TOOL_SETS, Tool, resolve_tools, tool


def names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "wiki.jsonl"
    path.write_text(json.dumps({"title": "Ed Wood", "text": "Ed Wood was a filmmaker."}) + "\n")
    return path


def test_tool_sets_are_the_contract_T2() -> None:
    assert sorted(TOOL_SETS) == ["calc", "files", "human", "tests", "wiki", "write"]
    assert tao.tools.resolve_tools is resolve_tools


def test_every_set_resolves_to_its_tools_without_finish_T2(tmp_path: Path, corpus: Path) -> None:
    tools = resolve_tools(
        ["calc", "files,tests", "wiki", "human"], project=tmp_path, corpus=corpus, ask=str
    )
    assert names(tools) == [
        "calculator", "read_file", "list_files", "run_tests", "search", "lookup", "ask_human",
    ]  # fmt: skip
    assert "finish" not in names(tools)


def test_comma_separated_string_spaces_case_and_repeats(tmp_path: Path) -> None:
    assert names(resolve_tools("files, Tests ,files", project=tmp_path)) == [
        "read_file", "list_files", "run_tests",
    ]  # fmt: skip


def test_project_defaults_to_the_current_folder_S1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hello.txt").write_text("hi from cwd")
    monkeypatch.chdir(tmp_path)
    read_file, _ = resolve_tools(["files"])
    assert read_file.invoke({"path": "hello.txt"}) == "hi from cwd"


def test_tools_and_functions_pass_through_T1() -> None:
    @tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        return a + b

    tools = resolve_tools([shout, add, "calc"])
    assert names(tools) == ["shout", "add", "calculator"]
    assert tools[0] is shout
    assert tools[1].invoke({"a": 2, "b": 3}) == "5"


def test_unknown_set_lists_the_valid_ones_T2() -> None:
    with pytest.raises(UnknownToolSetError) as caught:
        resolve_tools(["files,browser"])
    assert str(caught.value) == (
        "unknown tool set 'browser'; valid sets: calc, files, tests, wiki, write, human"
    )


def test_wiki_without_corpus_uses_the_shipped_sample_or_the_named_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30: ``--tools wiki`` runs from a fresh install, offline, on the sample's pages."""
    search, _ = resolve_tools(["wiki"])
    assert search.invoke({"entity": "Scott Derrickson"}).startswith("Scott Derrickson (born")
    monkeypatch.setenv("TAO_EVAL_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match=r"\$TAO_EVAL_DATA .*nowhere: no such folder"):
        resolve_tools(["wiki"])


def test_duplicate_and_reserved_names_are_refused_T1() -> None:
    def calculator(expression: str) -> str:
        """My own calculator."""
        return expression

    def finish(answer: str) -> str:
        """Finish."""
        return answer

    with pytest.raises(ToolDefinitionError, match="two tools are named 'calculator'"):
        resolve_tools(["calc", calculator])
    with pytest.raises(ToolDefinitionError, match="'finish' is reserved"):
        resolve_tools([finish])
    with pytest.raises(ToolDefinitionError, match="cannot use 42 as a tool"):
        resolve_tools([42])  # type: ignore[list-item]
