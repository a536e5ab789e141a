"""The results file: one JSON line per finished question, so an interrupted eval resumes.

The file is ``$TAO_HOME/evals/BENCHMARK-STRATEGY-HASH.jsonl``, where ``HASH``
is a digest of the settings that decide the answers (model, prompts, corpus,
questions, steps, samples, ...), never of ``--limit``, ``--concurrency`` or
``--executor``: a rerun with the same arguments finds the same file and skips
every question already in it. Each line is written whole, flushed and fsynced;
a line torn by a kill is cut off before the next append. A ``.json`` file
beside it holds the settings it was made with.

    results = ResultsFile.for_settings(key)
    done = results.load()          # {question index: QuestionRecord}
    results.append(record)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from tao.errors import ConfigError
from tao.eval.record import QuestionRecord
from tao.paths import private_dir, private_open, tao_home
from tao.state.jsontypes import JSON, JSONObject


class ResultsError(ConfigError):
    """A results file that cannot be read: the message names the file and line."""


def evals_dir() -> Path:
    """``$TAO_HOME/evals`` (``TAO_HOME`` defaults to the platform's user data folder)."""
    return tao_home() / "evals"


def settings_digest(key: JSONObject) -> str:
    """The file name's ``HASH``: equal settings, equal digest (and so the same file)."""
    text = json.dumps(key, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class ResultsFile:
    """An append-only JSONL file of :class:`QuestionRecord` lines."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_settings(cls, key: JSONObject, folder: Path | None = None) -> ResultsFile:
        """The results file of these settings, its folder and settings file created if needed."""
        folder = folder or evals_dir()
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{key['benchmark']}-{key['strategy']}")
        path = folder / f"{slug}-{settings_digest(key)}.jsonl"
        private_dir(folder)
        meta = path.with_suffix(".json")
        if not meta.exists():
            tmp = meta.with_suffix(f".json.{os.getpid()}.tmp")
            with open(tmp, "w", encoding="utf-8", opener=private_open) as handle:
                handle.write(json.dumps(key, indent=2, sort_keys=True) + "\n")
            os.replace(tmp, meta)
        return cls(path)

    def load(self) -> dict[int, QuestionRecord]:
        """Every finished question by index; a torn last line is dropped (and cut from the file)."""
        records: dict[int, QuestionRecord] = {}
        for record in self.read(repair=True):
            records[record.index] = record
        return records

    def read(self, *, repair: bool = False) -> list[QuestionRecord]:
        """All records in file order. With ``repair``, a torn last line is cut off the file."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as error:
            raise ResultsError(f"cannot read results file {self.path}: {error.strerror}") from None
        records: list[QuestionRecord] = []
        offset = 0
        lines = data.split(b"\n")
        for number, raw in enumerate(lines, start=1):
            last = number == len(lines)
            if raw.strip():
                record = self._parse(raw, number, tolerate=last)
                if record is None:  # torn by a kill mid-write: never finished, so not kept
                    if repair:
                        self._truncate(offset)
                    break
                records.append(record)
                if last and repair:  # whole JSON, newline lost: end the line before appending
                    with open(self.path, "ab", opener=private_open) as handle:
                        handle.write(b"\n")
            offset += len(raw) + 1
        return records

    def _parse(self, raw: bytes, number: int, *, tolerate: bool) -> QuestionRecord | None:
        try:
            row: JSON = json.loads(raw.decode("utf-8"))
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
            return QuestionRecord.from_json(row)
        except (ValueError, TypeError) as error:
            if tolerate:
                return None
            raise ResultsError(f"{self.path}:{number}: not a results line ({error})") from None

    def _truncate(self, size: int) -> None:
        with open(self.path, "r+b", opener=private_open) as handle:
            handle.truncate(size)
            handle.flush()
            os.fsync(handle.fileno())

    def append(self, record: QuestionRecord) -> None:
        """Write one whole line, flushed and fsynced before returning."""
        line = json.dumps(record.to_json(), ensure_ascii=False) + "\n"
        with open(self.path, "ab", opener=private_open) as handle:
            handle.write(line.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
