"""The benchmarks' questions: HotpotQA (JSONL) and FEVER (a JSON array), read strictly.

A missing file or a malformed entry is an :class:`EvalDataError` naming the file
and the line (HotpotQA) or entry (FEVER), never a traceback half-way through an eval.

    questions = load_questions("hotpotqa", Path("questions_dev.jsonl"))
    questions[0].question, questions[0].gold
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tao.errors import ConfigError
from tao.eval.metrics import normalize_label
from tao.state.jsontypes import JSON, JSONObject

Benchmark = Literal["hotpotqa", "fever"]
BENCHMARKS: tuple[Benchmark, ...] = ("hotpotqa", "fever")


class EvalDataError(ConfigError):
    """A questions file that is missing or malformed; the message names file and line."""


@dataclass(frozen=True)
class Question:
    """One benchmark item; ``index`` is its position in the file (results are ordered by it)."""

    index: int
    id: str
    question: str
    gold: str


def load_questions(benchmark: Benchmark, path: Path) -> list[Question]:
    """Read every question of ``benchmark`` from ``path``, in file order."""
    if benchmark == "hotpotqa":
        return _load_hotpotqa(path)
    if benchmark == "fever":
        return _load_fever(path)
    raise EvalDataError(f"unknown benchmark {benchmark!r}; choose one of: {', '.join(BENCHMARKS)}")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise EvalDataError(f"questions file not found: {path}") from None
    except IsADirectoryError:
        raise EvalDataError(f"questions file {path} is a folder, not a file") from None
    except OSError as error:
        raise EvalDataError(f"cannot read questions file {path}: {error.strerror}") from None


def _text_field(row: JSONObject, names: tuple[str, ...], where: str) -> str:
    for name in names:
        value = row.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, bool | int | float) and name != names[0]:
            return str(value)
    raise EvalDataError(f"{where}: needs a non-empty string field {names[0]!r}")


def _load_hotpotqa(path: Path) -> list[Question]:
    """One JSON object a line: ``question``, ``answer`` and optionally ``_id``/``id``."""
    questions: list[Question] = []
    for row, number in _jsonl_rows(_text(path), path):
        where = f"{path}:{number}"
        if not isinstance(row, dict):
            raise EvalDataError(f"{where}: each line must be a JSON object")
        question = _text_field(row, ("question",), where)
        answer = _text_field(row, ("answer",), where)
        ident = str(row.get("_id") or row.get("id") or f"line-{number}")
        questions.append(Question(len(questions), ident, question, answer))
    if not questions:
        raise EvalDataError(f"questions file {path} holds no questions")
    return questions


def _load_fever(path: Path) -> list[Question]:
    """A JSON array (or JSONL) of ``{"id", "claim", "label"}`` objects."""
    text = _text(path)
    array = text.lstrip().startswith("[")
    questions: list[Question] = []
    for row, number in _array_items(text, path) if array else _jsonl_rows(text, path):
        where = f"{path}:{number}"
        if not isinstance(row, dict):
            raise EvalDataError(f"{where}: each claim must be a JSON object")
        claim = _text_field(row, ("claim",), where)
        label = _text_field(row, ("label",), where)
        if normalize_label(label) is None:
            raise EvalDataError(
                f"{where}: label {label!r} is not SUPPORTS, REFUTES or NOT ENOUGH INFO"
            )
        questions.append(Question(len(questions), str(row.get("id", where)), claim, label))
    if not questions:
        raise EvalDataError(f"questions file {path} holds no claims")
    return questions


def _text(path: Path) -> str:
    """The file's text; bytes that are not UTF-8 are an error naming their line."""
    data = _read(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise EvalDataError(f"{path}:{line}: not UTF-8 text") from None


def _jsonl_rows(text: str, path: Path) -> list[tuple[JSON, int]]:
    """Each non-blank line's JSON value with its line number (only ``\\n`` ends a line)."""
    rows: list[tuple[JSON, int]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                rows.append((json.loads(line), number))
            except json.JSONDecodeError as error:
                raise EvalDataError(f"{path}:{number}: not valid JSON ({error.msg})") from None
    return rows


def _array_items(text: str, path: Path) -> list[tuple[JSON, int]]:
    """The items of a top-level JSON array, each with the line it starts on."""
    decoder = json.JSONDecoder()
    items: list[tuple[JSON, int]] = []
    pos = text.index("[") + 1

    def skip(at: int) -> int:
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        return at

    def fail(at: int, message: str) -> EvalDataError:
        return EvalDataError(f"{path}:{text.count(chr(10), 0, at) + 1}: not valid JSON ({message})")

    pos = skip(pos)
    if pos < len(text) and text[pos] == "]":
        return items
    while True:
        try:
            item, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as error:
            raise fail(error.pos, error.msg) from None
        items.append((item, text.count("\n", 0, pos) + 1))
        pos = skip(end)
        if pos < len(text) and text[pos] == ",":
            pos = skip(pos + 1)
            continue
        if pos < len(text) and text[pos] == "]":
            if text[pos + 1 :].strip():
                raise fail(pos + 1, "extra data after the array")
            return items
        raise fail(pos, "expected ',' or ']' after an entry")
