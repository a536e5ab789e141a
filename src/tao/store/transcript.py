"""Each run's transcript, stored once and append-only (SPEC R3, schema v3).

A run's messages are never edited once appended, so every model input and
every checkpoint is a prefix of one growing list. ``run_messages`` keeps that
list, one row per message (``seq`` from 0); a step stores how many of them it
was sent, a checkpoint how many it holds. Storing a step or a checkpoint thus
writes only the messages the log does not have yet, and costs the same at step
600 as at step 1.

    end = tail(conn, run_id)                                 # None: no such run
    count = extend(conn, run_id, checkpoint.messages, end)   # None: not an extension
    messages = load(conn, run_id, count)                     # the first ``count`` messages

The assumption is checked, cheaply, at every write: the list given must agree
with the stored one at its last common message (compared as stored JSON). A
list that does not (a caller that rewrote its history) is not appended;
:func:`extend` returns ``None`` and the caller stores that list in full instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from tao.errors import StateError
from tao.models.base import Message
from tao.redact.structured import redact_json
from tao.state.config import Checkpoint
from tao.state.jsontypes import JSON, JSONObject
from tao.store.sql import Connection, SQLValue, dumps, loads

#: The run (no row: no such run), how many messages it has stored, the last one, and its
#: last step.
_TAIL = """
    SELECT m.seq, m.message, (SELECT max(idx) FROM steps WHERE run_id = r.id) FROM runs r
    LEFT JOIN run_messages m
        ON m.run_id = r.id AND m.seq = (SELECT max(seq) FROM run_messages WHERE run_id = r.id)
    WHERE r.id = ?
"""
_ONE = "SELECT message FROM run_messages WHERE run_id = ? AND seq = ?"
_APPEND = "INSERT INTO run_messages (run_id, seq, message) VALUES {rows} ON CONFLICT DO NOTHING"
_LOAD = "SELECT seq, message FROM run_messages WHERE run_id = ? AND seq < ? ORDER BY seq"
#: Rows per INSERT, well under every SQLite's limit of bound parameters.
_CHUNK = 200


@dataclass
class Tail:
    """The end of a run's stored transcript, kept up to date by :func:`extend`."""

    count: int
    """How many messages the log holds for the run."""
    last: str | None
    """The last of them as stored JSON (``None`` when there is none)."""
    last_object: int | None = None
    """``id()`` of the in-memory message stored last, to skip re-serialising it."""
    last_step: int = 0
    """The highest index of the run's stored steps (0: none): a step after it is new."""


def tail(conn: Connection, run_id: str) -> Tail | None:
    """Where the run's stored transcript ends; ``None`` when there is no such run."""
    row = conn.execute(_TAIL, (run_id,)).fetchone()
    if row is None:
        return None
    last_step = int(row[2] or 0)
    if row[0] is None:
        return Tail(0, None, last_step=last_step)
    return Tail(int(row[0]) + 1, row[1], last_step=last_step)


def extend(conn: Connection, run_id: str, messages: Sequence[Message], end: Tail) -> int | None:
    """Append what of ``messages`` the stored transcript (ending at ``end``) lacks.

    Returns ``len(messages)``, or ``None`` when ``messages`` is neither a prefix nor
    an extension of the stored transcript (checked at their last common message);
    nothing is written then. Safe to repeat: a message already stored at its place
    is kept (a retried write).
    """
    common = min(end.count, len(messages))
    if common:
        stored = end.last
        if common < end.count:
            row = conn.execute(_ONE, (run_id, common - 1)).fetchone()
            stored = None if row is None else row[0]
        same = common == end.count and id(messages[common - 1]) == end.last_object
        if not same and stored != stored_form(messages[common - 1]):
            return None
    new = [stored_form(m) for m in messages[end.count :]]
    for start in range(0, len(new), _CHUNK):
        chunk = new[start : start + _CHUNK]
        params: list[SQLValue] = []
        for seq, text in enumerate(chunk, end.count + start):
            params += (run_id, seq, text)
        conn.execute(_APPEND.format(rows=", ".join(["(?, ?, ?)"] * len(chunk))), params)
    if new:
        end.count, end.last, end.last_object = len(messages), new[-1], id(messages[-1])
    return len(messages)


def save_checkpoint(
    conn: Connection, run_id: str, checkpoint: Checkpoint, rest: JSONObject, end: Tail
) -> None:
    """The checkpoint's new messages, then the row's copy of the rest (``rest``: redacted,
    :func:`tao.store.private.keep`). A transcript that does not extend the stored one is
    kept whole in the row instead."""
    count = extend(conn, run_id, checkpoint.messages, end)
    whole = rest if count is not None else redact_json(checkpoint.to_json())
    conn.execute(
        "UPDATE runs SET state = ?, state_messages = ? WHERE id = ?", (dumps(whole), count, run_id)
    )


def stored_form(message: Message) -> str:
    """A message as the log keeps it: JSON, with secrets redacted (SPEC S8)."""
    return dumps(redact_json(cast(JSON, message)))


def load(conn: Connection, run_id: str, count: int) -> list[Message]:
    """The run's first ``count`` messages; a gap or damaged row is a :class:`StateError`."""
    messages: list[Message] = []
    for row in conn.execute(_LOAD, (run_id, count)):
        if row[0] != len(messages):
            break
        message = loads(row[1], f"message {row[0]} of run {run_id}")
        if not isinstance(message, dict):
            raise StateError(f"the run log holds a damaged message {row[0]} of run {run_id}")
        messages.append(cast(Message, message))
    if len(messages) != count:
        raise StateError(
            f"the run log holds {len(messages)} messages of run {run_id} in order, "
            f"but a step or checkpoint refers to {count}"
        )
    return messages
