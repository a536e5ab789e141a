"""What tao leaves on disk, as the red-team modules read it for leaks."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path


def home_files(home: Path) -> dict[str, bytes]:
    """Every file under TAO_HOME but ``private/`` (owner-only: the real values a resume
    needs), by its path relative to TAO_HOME."""
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in home.rglob("*")
        if p.is_file() and "private" not in p.relative_to(home).parts
    }


def decoded(value: object) -> str:
    """A cell as text a leak can be found in: bytes as UTF-8, zlib or gzip data inflated,
    a JSON document decoded (so ``\\u`` escapes read as the letters they stand for)."""
    if isinstance(value, memoryview):
        value = bytes(value)
    if isinstance(value, bytes):
        for wbits in (zlib.MAX_WBITS, 16 + zlib.MAX_WBITS):
            with contextlib.suppress(zlib.error):
                value = zlib.decompress(value, wbits)
                break
        value = value.decode("utf-8", "replace")
    text = str(value)
    with contextlib.suppress(ValueError):
        return text + "\n" + json.dumps(json.loads(text), ensure_ascii=False)
    return text


def sqlite_cells(path: Path) -> Iterator[tuple[str, str, str]]:
    """Every cell of every table of a SQLite file, decoded: (table, column, text)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            cursor = db.execute(f'SELECT * FROM "{table}"')
            columns = [d[0] for d in cursor.description]
            for row in cursor:
                for column, value in zip(columns, row, strict=True):
                    if value is not None:
                        yield table, column, decoded(value)


def postgres_cells(url: str) -> Iterator[tuple[str, str, str]]:
    """Every cell of every table of every schema of a PostgreSQL database but the system's
    (tao's run log and DBOS's ``dbos`` schema), decoded: (schema.table, column, text)."""
    import psycopg

    with psycopg.connect(url) as db:
        tables = db.execute(
            "SELECT table_schema, table_name FROM information_schema.tables WHERE "
            "table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', "
            "'information_schema')"
        ).fetchall()
        for schema, table in tables:
            cursor = db.execute(f'SELECT * FROM "{schema}"."{table}"'.encode())
            columns = [d.name for d in cursor.description or ()]
            for row in cursor.fetchall():
                for column, value in zip(columns, row, strict=True):
                    if value is not None:
                        yield f"{schema}.{table}", column, decoded(value)
