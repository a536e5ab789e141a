"""How a step and the model call behind it map onto rows (SPEC M3, L1, R3).

``steps`` holds what the trace shows; ``model_calls`` what the model saw and said.
What it saw is a prefix of the run's transcript (:mod:`tao.store.transcript`), so a
model call stores only its length (``input_count``), and the messages stay in
``run_messages`` once. Rows written before schema v3, and any input that did
not extend the stored transcript, carry their messages in ``model_calls.messages``.

Every write here is idempotent (a retried transaction after a lost connection
leaves the same rows): steps are keyed by (run, index), a step's model call is
replaced, and messages already stored at their place are kept.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import cast

from tao.errors import StateError
from tao.models.base import Message
from tao.redact.scan import redact
from tao.redact.structured import redact_json
from tao.state import codec
from tao.state.jsontypes import JSON, JSONObject
from tao.state.result import RunResult, Step
from tao.store import transcript
from tao.store.sql import Connection, Row, dumps, loads, loads_object

#: Step columns named as :class:`tao.state.result.Step` fields (``arguments`` and
#: ``model_input`` hold JSON).
STEP_FIELDS = (
    "index", "kind", "thought", "tool", "unparsed", "observation", "model_output", "duration_s",
    "model_duration_s", "tool_duration_s", "input_tokens", "output_tokens", "evaluated_tokens",
    "call_index", "repeat_of", "cost_usd", "model", "child_run", "child_input_tokens",
    "child_output_tokens", "child_cost_usd",
)  # fmt: skip

_CALL = """(SELECT {column} FROM model_calls m WHERE m.run_id = s.run_id
                AND m.step_index = s.idx ORDER BY m.id DESC LIMIT 1)"""

SELECT_STEPS = f"""
    SELECT s.idx AS "index", s.kind, s.thought, s.tool, s.unparsed, s.arguments, s.observation,
           s.duration_s, s.model_duration_s, s.tool_duration_s, s.input_tokens,
           s.output_tokens, s.evaluated_tokens, s.call_index, s.repeat_of, s.forced, s.cost_usd,
           s.compactions,
           s.approval,
           s.model, s.model_failures, s.child_run, s.child_input_tokens, s.child_output_tokens,
           s.child_cost_usd,
           {_CALL.format(column="messages")} AS model_input,
           {_CALL.format(column="input_count")} AS input_count,
           {_CALL.format(column="reply")} AS model_output
    FROM steps s WHERE s.run_id = ? ORDER BY s.idx
"""  # noqa: S608 (constant column names, no data)

_INSERT_STEP = """
    INSERT INTO steps (run_id, idx, kind, thought, tool, unparsed, arguments,
        observation, duration_s, model_duration_s, tool_duration_s, input_tokens,
        output_tokens, evaluated_tokens, call_index, repeat_of, forced, cost_usd, compactions,
        approval, model, model_failures, child_run, child_input_tokens, child_output_tokens,
        child_cost_usd, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (run_id, idx) DO UPDATE SET
        kind = excluded.kind, thought = excluded.thought, tool = excluded.tool,
        unparsed = excluded.unparsed, arguments = excluded.arguments,
        observation = excluded.observation, duration_s = excluded.duration_s,
        model_duration_s = excluded.model_duration_s,
        tool_duration_s = excluded.tool_duration_s, input_tokens = excluded.input_tokens,
        output_tokens = excluded.output_tokens, evaluated_tokens = excluded.evaluated_tokens,
        call_index = excluded.call_index, cost_usd = excluded.cost_usd,
        compactions = excluded.compactions, approval = excluded.approval,
        model = excluded.model, model_failures = excluded.model_failures,
        child_run = excluded.child_run, child_input_tokens = excluded.child_input_tokens,
        child_output_tokens = excluded.child_output_tokens,
        child_cost_usd = excluded.child_cost_usd, created_at = excluded.created_at
"""

_INSERT_MODEL_CALL = """
    INSERT INTO model_calls (run_id, step_index, model, messages, input_count, reply,
        input_tokens, output_tokens, evaluated_tokens, duration_s, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


def read_steps(conn: Connection, run_id: str) -> list[Step]:
    """Every stored step of a run, in order, each with its full model input."""
    rows = conn.execute(SELECT_STEPS, (run_id,)).fetchall()
    longest = max((row["input_count"] or 0 for row in rows), default=0)
    messages = transcript.load(conn, run_id, longest) if longest else []
    return [step_from_row(row, run_id, messages) for row in rows]


def step_from_row(row: Row, run_id: str, messages: Sequence[Message]) -> Step:
    """A stored step with the model call behind it: its input (the first ``input_count``
    of the run's ``messages``, then any stored with the call) and its raw reply."""
    data: JSONObject = {name: row[name] for name in STEP_FIELDS}
    where = f"step {data['index']} of run {run_id}"
    arguments = row["arguments"]
    data["arguments"] = None if arguments is None else loads_object(arguments, where)
    inline = loads(row["model_input"] or "[]", where)
    if not isinstance(inline, list):
        raise StateError(f"the run log holds a damaged model input in {where}")
    data["model_input"] = [*cast(list[JSON], messages[: row["input_count"] or 0]), *inline]
    data["model_output"] = row["model_output"] or ""
    data["forced"] = bool(row["forced"])
    compactions = loads(row["compactions"] or "[]", where)
    if not isinstance(compactions, list):
        raise StateError(f"the run log holds damaged compactions in {where}")
    data["compactions"] = compactions
    approval = row["approval"]
    data["approval"] = None if approval is None else loads_object(approval, where)
    failures = loads(row["model_failures"] or "[]", where)
    data["model_failures"] = failures if isinstance(failures, list) else []
    try:
        return Step.from_json(data)
    except (TypeError, ValueError) as error:
        raise StateError(f"the run log holds a damaged {where}: {error}") from None


def _redacted(text: str | None) -> str | None:
    return None if text is None else redact(text)


def insert_step(conn: Connection, result: RunResult, step: Step, end: transcript.Tail) -> None:
    """Write (or replace) one step and the model call behind it.

    ``end`` is where the run's stored transcript ends (:func:`tao.store.transcript.tail`).
    """
    key = (result.run_id, step.index)
    now = time.time()
    arguments = None if step.arguments is None else dumps(redact_json(step.arguments))
    records: JSON = [codec.encode(c) for c in step.compactions]
    compactions = dumps(redact_json(records)) if step.compactions else None
    approval = None if step.approval is None else dumps(redact_json(step.approval.to_json()))
    conn.execute(
        _INSERT_STEP,
        (*key, str(step.kind), _redacted(step.thought), step.tool, _redacted(step.unparsed),
         arguments, _redacted(step.observation), step.duration_s, step.model_duration_s,
         step.tool_duration_s, step.input_tokens, step.output_tokens, step.evaluated_tokens,
         step.call_index, step.repeat_of, int(step.forced), step.cost_usd, compactions, approval,
         step.model,
         dumps([redact(f) for f in step.model_failures]) if step.model_failures else None,
         step.child_run, step.child_input_tokens, step.child_output_tokens, step.child_cost_usd,
         now),
    )  # fmt: skip
    count = transcript.extend(conn, result.run_id, step.model_input, end)
    inline = "[]" if count is not None else dumps(redact_json(cast(JSON, step.model_input)))
    if step.index <= end.last_step:  # stored before: its model call is replaced
        conn.execute("DELETE FROM model_calls WHERE run_id = ? AND step_index = ?", key)
    end.last_step = max(end.last_step, step.index)
    conn.execute(
        _INSERT_MODEL_CALL,
        (*key, step.model or result.model, inline, count, redact(step.model_output),
         step.input_tokens, step.output_tokens, step.evaluated_tokens, step.model_duration_s, now),
    )  # fmt: skip


def stored_indexes(conn: Connection, run_id: str) -> set[int]:
    """The indexes of the run's steps already in the log."""
    return {
        int(row[0]) for row in conn.execute("SELECT idx FROM steps WHERE run_id = ?", (run_id,))
    }
