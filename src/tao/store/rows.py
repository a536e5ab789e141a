"""How runs and steps map onto rows of the run log (SPEC M3, L1).

Kept apart from the stores (connections, locking, errors) so the translation
between typed run state and SQL lives in one place, written once for SQLite and
PostgreSQL. JSON appears only here: each JSON column is parsed on the way in
and a damaged one is a :class:`tao.errors.StateError` naming the run, never a
traceback.
"""

from __future__ import annotations

import os
import time

from tao.redact.scan import redact, redact_url
from tao.redact.structured import redact_json, redact_optional
from tao.state.config import RunConfig
from tao.state.result import RunResult, Status
from tao.store.sql import HOST, Connection, dumps

#: A run that starts (again) is running, in this process, with nothing of an end recorded.
_RESTART = """
    DO UPDATE SET status = excluded.status, finished_at = NULL, duration_s = NULL,
        answer = NULL, error = NULL, stop_reason = NULL, pid = excluded.pid, host = excluded.host
"""


def stored_config(config: RunConfig | None) -> str:
    """A run's settings as the log keeps them (JSON): no credentials in URLs, no secrets
    (S8). An agent's runs share one config object, so the last one's text is kept."""
    global _last_config
    if config is None:
        return "{}"
    last = _last_config
    if last is not None and last[0] is config:
        return last[1]
    base_url = redact_url(config.base_url) if config.base_url else None
    text = dumps(redact_json(config.replace(base_url=base_url).to_json()))
    _last_config = (config, text)  # one assignment: safe for threads
    return text


_last_config: tuple[RunConfig, str] | None = None


_END = """
    UPDATE runs SET status = ?, answer = ?, error = ?, stop_reason = ?, finished_at = ?,
        duration_s = ?, model_calls = ?, input_tokens = ?, output_tokens = ?,
        evaluated_tokens = ?, cost_usd = ?
    WHERE id = ?
"""


def record_end(conn: Connection, result: RunResult) -> None:
    """The run's row as it ended: status, answer (redacted, SPEC S8), times and usage."""
    usage = result.usage
    conn.execute(
        _END,
        (str(result.status), redact_optional(result.answer), redact_optional(result.error),
         redact_optional(result.stop_reason), time.time(), result.duration_s, usage.model_calls,
         usage.input_tokens, usage.output_tokens, usage.evaluated_tokens, usage.cost_usd,
         result.run_id),
    )  # fmt: skip


def insert_run(
    conn: Connection,
    result: RunResult,
    config: RunConfig | None,
    *,
    restart: bool,
    status: Status = Status.RUNNING,
) -> None:
    """Insert the run's row as ``running``; ``restart`` makes an existing one running again
    (a resumed run), else an existing row is kept (a late observer's ``finish_run``).
    ``status`` ``queued``: a submitted run no worker has started yet (``tao submit``)."""
    conn.execute(
        f"""
        INSERT INTO runs (id, task, model, lang, status, started_at, config, pid, host,
                          parent_id, parent_step, parent_position)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) {_RESTART if restart else "DO NOTHING"}
        """,  # noqa: S608 (a constant clause, no data)
        (
            result.run_id,
            redact(result.task),
            redact(result.model),  # a token pasted as the model (`-m openai:ghp_…`) (S8)
            result.lang,
            str(status),
            result.started_at or time.time(),
            stored_config(config),
            os.getpid(),
            HOST,
            result.parent_id,
            result.parent_step,
            result.parent_position,
        ),
    )


def shortest_prefixes(conn: Connection, run_ids: list[str], min_length: int) -> dict[str, str]:
    """Each run id's shortest prefix (at least ``min_length``) that no other run shares."""
    shortest: dict[str, str] = {}
    for run_id in run_ids:
        length = min_length
        for neighbour in conn.execute(
            "SELECT max(id) FROM runs WHERE id < ? UNION ALL SELECT min(id) FROM runs WHERE id > ?",
            (run_id, run_id),
        ):
            if neighbour[0] is not None:
                length = max(length, common_prefix(run_id, neighbour[0]) + 1)
        shortest[run_id] = run_id[:length]
    return shortest


def common_prefix(a: str, b: str) -> int:
    same = (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    return next(same, min(len(a), len(b)))
