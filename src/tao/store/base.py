"""The run log's interface, and everything about it that is the same on every database.

:class:`Store` is what the agent, the CLI and the web page use. Its subclasses
only connect, run transactions and word errors: :class:`tao.store.sqlite.SQLiteStore`
(one file under ``$TAO_HOME``) and :class:`tao.store.postgres.PostgresStore`
(``TAO_DATABASE_URL``). Every query is written here once, with ``?`` placeholders,
against the :class:`~tao.store.sql.Connection` a subclass yields.

    store = open_store()                     # SQLite, or PostgreSQL if TAO_DATABASE_URL is set
    for summary in store.list_runs(limit=5):
        print(summary.run_id[:8], summary.status, summary.task)
    result = store.get_run("3f2a")           # a unique prefix is enough

Typed state crosses this boundary, JSON stays inside: a :class:`tao.state.config.Checkpoint`
and a :class:`tao.state.config.RunConfig` go in and come out; a damaged JSON column is a
:class:`tao.errors.StateError` naming the run.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TypeVar, cast

from tao.errors import StateError, StoreError, UnknownRunError
from tao.models.base import Message
from tao.redact.structured import redact_json
from tao.state.budget import Usage
from tao.state.config import Checkpoint, PendingCall, RunConfig
from tao.state.jsontypes import JSON, JSONObject
from tao.state.result import RunResult, Status, Step
from tao.store import lease as _lease
from tao.store import private, transcript
from tao.store.query import (
    SELECT_SUMMARY,
    RunPage,
    RunQuery,
    RunSummary,
    find_runs,
    models,
    summary_from_row,
)
from tao.store.retry import retrying
from tao.store.rows import insert_run, record_end, shortest_prefixes
from tao.store.schema import SCHEMA_VERSION
from tao.store.sql import Connection, dumps, loads_object
from tao.store.steps import insert_step, read_steps, stored_indexes

T = TypeVar("T")


class Store(ABC):
    """A handle on one run log; safe to share between the threads of a process."""

    def __init__(self, where: str) -> None:
        #: Where the run log lives, for messages: a file path, or a URL without password.
        self.where = where
        #: Held by every transaction: one connection, shared by the threads of a process.
        self._lock = threading.Lock()
        #: The tail each run's transcript had after this process last wrote it.
        self._tails: dict[str, transcript.Tail] = {}

    def _tail(self, conn: Connection, run_id: str) -> transcript.Tail | None:
        """Where the run's stored transcript ends; knows the in-memory message stored last
        when nobody else wrote since, so it need not be serialised again to compare."""
        end, known = transcript.tail(conn, run_id), self._tails.get(run_id)
        if end is not None:
            if known is not None and (known.count, known.last) == (end.count, end.last):
                end.last_object = known.last_object
            self._tails[run_id] = end
        return end

    # -- what a backend provides -----------------------------------------------------

    def close(self) -> None:
        """Close the connection, once no thread is inside a transaction."""
        with self._lock:
            self._disconnect()

    @abstractmethod
    def _disconnect(self) -> None: ...

    @abstractmethod
    def _transaction(self, *, write: bool) -> AbstractContextManager[Connection]:
        """One transaction under the store's lock: committed on exit, rolled back on error.

        A read one sees one consistent snapshot over all its statements; a write
        one is short and takes the write lock up front, so writers never deadlock.
        Database errors leave it as :class:`tao.errors.StoreError`.
        """

    def now(self, conn: Connection) -> float:
        """Seconds since the epoch by the run log's clock: the one every lease is timed by,
        so processes on hosts whose clocks differ agree on when a lease runs out."""
        return time.time()

    def _read(self) -> AbstractContextManager[Connection]:
        return self._transaction(write=False)

    def _write(self) -> AbstractContextManager[Connection]:
        return self._transaction(write=True)

    def _retrying(self, work: Callable[[Connection], T], *, write: bool) -> T:
        """``work`` in one transaction; retried while the connection is lost (SPEC R4)."""
        return retrying(lambda: self._transaction(write=write), work)

    def _record(self, run_id: str, what: str, work: Callable[[Connection], None]) -> None:
        """A write for one run; its failure names the run and what was not recorded."""
        try:
            self._retrying(work, write=True)
        except StoreError as error:
            raise StoreError(f"run {run_id}: could not record {what}: {error}") from None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing (the agent, through RunRecorder) ------------------------------------

    def begin_run(self, result: RunResult, config: RunConfig | None = None) -> None:
        """Record that ``result`` started; a resumed run (same id) becomes running again."""
        self._record(
            result.run_id, "its start", lambda conn: insert_run(conn, result, config, restart=True)
        )

    def queue_run(self, result: RunResult, config: RunConfig) -> None:
        """Record a submitted run as ``queued``: its row and settings, no step, no checkpoint
        (a worker starts it from its task, through the same reopen as ``tao resume``)."""
        self._record(
            result.run_id,
            "its submission",
            lambda conn: insert_run(conn, result, config, restart=False, status=Status.QUEUED),
        )

    def add_step(self, result: RunResult, step: Step) -> None:
        """Record one finished step, its model call and new messages, in one transaction."""
        self.save_progress(result, (step,), None)

    def save_progress(
        self,
        result: RunResult,
        steps: Sequence[Step],
        checkpoint: Checkpoint | None,
        *,
        begin: bool = False,
        config: RunConfig | None = None,
        lease: _lease.Terms | None = None,
    ) -> None:
        """Finished steps and the checkpoint after them, in one transaction: never a stored
        step without the checkpoint that follows it. ``begin``: the run's row first, as
        :meth:`begin_run` writes it (with ``config``). ``lease``: this process's lease on
        the run, taken with the row (``begin``) or checked before writing (SPEC R5)."""
        run_id = result.run_id
        kept = _kept(run_id, checkpoint)  # once, outside the transaction and its retries

        def work(conn: Connection) -> None:
            if begin:
                insert_run(conn, result, config, restart=True)
            if lease is not None:
                self._hold(conn, run_id, lease, take=begin)
            end = self._tail(conn, run_id)
            if end is None and not steps:
                return  # no such run (yet): nothing to attach the checkpoint to
            if end is None:  # not begun here (an observer attached late): the row first
                insert_run(conn, result, None, restart=False)
                end = transcript.Tail(0, None)
            for step in steps:
                insert_step(conn, result, step, end)
            if kept is not None:
                transcript.save_checkpoint(conn, run_id, *kept, end)

        what = ", ".join(f"step {step.index}" for step in steps) or "its checkpoint"
        self._record(run_id, "its start" if begin and what == "its checkpoint" else what, work)

    def finish_run(
        self,
        result: RunResult,
        config: RunConfig | None = None,
        *,
        checkpoint: Checkpoint | None = None,
        steps: Sequence[Step] | None = None,
        begun: bool = False,
        lease: _lease.Terms | None = None,
    ) -> None:
        """Record the final status, answer and usage, with the run's last ``checkpoint``;
        also stores ``steps``, or without them any step of ``result`` not yet stored.

        Works without a prior :meth:`begin_run` (unless ``begun`` says there was one), so
        a finished result can be saved in one call (imports, tests, late observers).
        ``lease``: this process's lease, checked before writing and released with the end.
        """
        run_id = result.run_id
        kept = _kept(run_id, checkpoint)  # once, outside the transaction and its retries

        def work(conn: Connection) -> None:
            if not begun:
                insert_run(conn, result, config, restart=False)
            if lease is not None:
                self._hold(conn, run_id, lease, take=not begun)
            end = self._tail(conn, run_id) or transcript.Tail(0, None)
            stored = set() if steps is not None else stored_indexes(conn, run_id)
            for step in result.steps if steps is None else steps:
                if step.index not in stored:
                    insert_step(conn, result, step, end)
            if kept is not None:
                transcript.save_checkpoint(conn, run_id, *kept, end)
            record_end(conn, result)
            if lease is not None:
                _lease.release(conn, run_id, lease.holder)

        self._record(run_id, f"its end ({result.status})", work)
        self._tails.pop(run_id, None)

    # -- the run lease (SPEC R5; see tao.store.lease) --------------------------------------

    def _hold(self, conn: Connection, run_id: str, terms: _lease.Terms, *, take: bool) -> None:
        """Take (``take``) or check this holder's lease inside a write; raises
        :class:`~tao.errors.RunBusyError` (the write is rolled back) when another holds it."""
        now = self.now(conn)
        if take:
            other = _lease.take(conn, run_id, terms, now)
            if other is not None:
                raise _lease.busy(run_id, other)
        else:
            _lease.fence(conn, run_id, terms, now)

    def take_lease(self, run_id: str, terms: _lease.Terms) -> None:
        """Take the run's lease for ``terms.holder`` for ``terms.seconds``; a run already held
        by another live holder is :class:`~tao.errors.RunBusyError`, and nothing changes."""

        def work(conn: Connection) -> _lease.Lease | None:
            return _lease.take(conn, run_id, terms, self.now(conn))

        other = self._retrying(work, write=True)
        if other is not None:
            raise _lease.busy(run_id, other)

    def renew_lease(self, run_id: str, terms: _lease.Terms) -> bool:
        """Push the lease on by ``terms.seconds``; ``False`` when the holder lost it."""
        return self._retrying(
            lambda conn: _lease.renew(conn, run_id, terms, self.now(conn)), write=True
        )

    def release_lease(self, run_id: str, holder: str) -> None:
        """Give the lease up, if ``holder`` still holds it."""
        self._retrying(lambda conn: _lease.release(conn, run_id, holder), write=True)

    def get_lease(self, run_id: str) -> _lease.Lease | None:
        """Who holds the run's lease now (perhaps run out), or ``None``."""
        return self._retrying(lambda conn: _lease.read(conn, run_id), write=False)

    def check_free(self, run_id: str) -> None:
        """:class:`~tao.errors.RunBusyError` when a live holder has the run now: the early,
        read-only look a command takes before it builds anything for the run (the take
        itself comes later, and decides)."""

        def work(conn: Connection) -> _lease.Lease | None:
            held = _lease.read(conn, run_id)
            live = held is not None and held.until >= self.now(conn) and not held.dead()
            return held if live else None

        held = self._retrying(work, write=False)
        if held is not None:
            raise _lease.busy(run_id, held)

    def save_state(self, run_id: str, checkpoint: Checkpoint) -> None:
        """Keep the run's latest checkpoint: what ``tao resume`` continues from.

        Its transcript goes to the run's messages (only those not stored yet); the
        row keeps the rest and how many messages it holds.
        """
        rest = private.keep(run_id, _without_messages(checkpoint))

        def work(conn: Connection) -> None:
            end = self._tail(conn, run_id)
            if end is not None:  # else no such run (yet): nothing to attach it to
                transcript.save_checkpoint(conn, run_id, checkpoint, rest, end)

        self._record(run_id, "its checkpoint", work)

    def load_state(self, run_id: str) -> Checkpoint | None:
        """The latest checkpoint of a run (of any version, migrated), or ``None``."""

        def work(conn: Connection) -> tuple[str | None, list[Message] | None]:
            row = conn.execute(
                "SELECT state, state_messages FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            if row is None or row[0] is None:
                return None, None
            count = row[1]
            return row[0], None if count is None else transcript.load(conn, run_id, count)

        text, messages = self._retrying(work, write=False)
        if text is None:
            return None
        data = private.restore(run_id, loads_object(text, f"the checkpoint of run {run_id}"))
        if messages is not None:
            data["messages"] = cast(JSON, messages)
        try:
            return Checkpoint.from_json(data)
        except StateError as error:
            raise StateError(f"run {run_id}: {error}") from None

    # -- reading (the CLI, the web page, resume) -------------------------------------

    def list_runs(self, limit: int = 20, status: str | None = None) -> list[RunSummary]:
        """The ``limit`` most recently started runs, newest first, optionally of one status.

        A ``running`` row whose process is gone counts as ``interrupted`` (see
        :mod:`tao.store.query`).
        """
        return self.find_runs(RunQuery(status=status, limit=limit)).runs

    def find_runs(self, query: RunQuery) -> RunPage:
        """One page of the runs matching ``query`` (task text, status, model), newest first,
        and how many match in all; filtered, counted and paged by the database."""
        return self._retrying(lambda conn: find_runs(conn, query), write=False)

    def child_run(self, parent_id: str, step: int, position: int) -> str | None:
        """The child run the call at ``position`` of ``step`` of run ``parent_id`` started
        (``Agent.as_tool``), if it started one: the newest, should there be several."""

        def work(conn: Connection) -> str | None:
            row = conn.execute(
                "SELECT id FROM runs WHERE parent_id = ? AND parent_step = ? "
                "AND parent_position = ? ORDER BY id DESC LIMIT 1",
                (parent_id, step, position),
            ).fetchone()
            return None if row is None else str(row[0])

        return self._retrying(work, write=False)

    def models(self) -> list[str]:
        """Every model spec the log holds runs of, sorted."""
        return self._retrying(models, write=False)

    def resolve(self, run_id_or_prefix: str) -> str:
        """The full id of the one run whose id starts with ``run_id_or_prefix``."""
        prefix = run_id_or_prefix.strip()
        if not prefix:
            raise UnknownRunError("give a run id (or a unique prefix of one); see `tao runs list`")
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")

        def work(conn: Connection) -> list[str]:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (prefix,)).fetchone():
                return [prefix]
            rows = conn.execute(
                "SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY started_at DESC LIMIT 6",
                (escaped + "%",),
            ).fetchall()
            return [str(row[0]) for row in rows]

        rows = self._retrying(work, write=False)
        if not rows:
            raise UnknownRunError(f"no run with id {prefix!r} in {self.where}; see `tao runs list`")
        if len(rows) > 1:
            shown = ", ".join(rows[:5]) + (", …" if len(rows) > 5 else "")
            raise UnknownRunError(
                f"run id prefix {prefix!r} is ambiguous (matches {shown}); give more characters"
            )
        return rows[0]

    def unique_prefixes(self, run_ids: Iterable[str], min_length: int = 8) -> dict[str, str]:
        """The shortest prefix (at least ``min_length``) of each id that names only that run.

        Run ids start with a timestamp, so a fixed-width prefix is shared by
        runs started close together; the neighbours in id order decide instead.
        """
        ids = list(run_ids)
        return self._retrying(lambda conn: shortest_prefixes(conn, ids, min_length), write=False)

    def get_summary(self, run_id_or_prefix: str) -> RunSummary:
        """The :class:`RunSummary` of one run (its true state, including ``running``)."""
        run_id = self.resolve(run_id_or_prefix)
        query = f"{SELECT_SUMMARY} WHERE id = ?"
        row = self._retrying(lambda conn: conn.execute(query, (run_id,)).fetchone(), write=False)
        if row is None:  # deleted between the two reads
            raise StoreError(f"no run with id {run_id!r} in {self.where}")
        return summary_from_row(row)

    def get_run(self, run_id_or_prefix: str) -> RunResult:
        """The full :class:`RunResult` of one run: steps with their model input and output.

        ``status`` is the summary's (``running``, or ``interrupted`` once its
        process is gone); an ``awaiting_approval`` run's ``pending`` calls come
        from its checkpoint; ``config`` is the recorded :class:`RunConfig`.
        """
        summary = self.get_summary(run_id_or_prefix)
        run_id = summary.run_id
        steps = self._retrying(lambda conn: read_steps(conn, run_id), write=False)
        return RunResult(
            run_id=run_id,
            task=summary.task,
            model=summary.model,
            status=summary.status,
            answer=summary.answer,
            error=summary.error,
            steps=steps,
            stop_reason=summary.stop_reason,
            pending=self._pending(run_id) if summary.status is Status.AWAITING_APPROVAL else None,
            usage=Usage(
                model_calls=summary.model_calls,
                input_tokens=summary.input_tokens,
                output_tokens=summary.output_tokens,
                evaluated_tokens=summary.evaluated_tokens,
                cost_usd=summary.cost_usd,
            ),
            lang=summary.lang,
            started_at=summary.started_at,
            duration_s=summary.duration_s or 0.0,
            config=summary.config,
            parent_id=summary.parent_id,
            parent_step=summary.parent_step,
            parent_position=summary.parent_position,
        )

    def _pending(self, run_id: str) -> list[PendingCall] | None:
        checkpoint = self.load_state(run_id)
        return list(checkpoint.pending) if checkpoint is not None else None

    def export_jsonl(self, run_id: str, *, full: bool = False) -> Iterator[str]:
        """One run as JSON lines (no trailing newlines), for files, datasets and diffing.

        Line 1: ``{"type": "run", "schema": SCHEMA_VERSION, "run_id", "task",
        "model", "lang", "status", "answer", "error", "stop_reason", "started_at",
        "finished_at", "duration_s", "steps", "usage": {model_calls, input_tokens,
        output_tokens, evaluated_tokens, cost_usd}, "config"}``. Then one ``{"type": "step",
        "run_id", ...}`` per step in order, carrying every :meth:`Step.to_json`
        field. Its ``model_input`` holds the messages new since the step before
        (from index ``model_input_from``), as ``--json`` does; with ``full`` each
        step carries its whole input (``model_input_from`` 0), so each line stands alone.
        """
        summary = self.get_summary(run_id)
        result = self.get_run(summary.run_id)
        record = summary.to_json()
        usage_fields = ("model_calls", "input_tokens", "output_tokens", "evaluated_tokens")
        for name in (*usage_fields, "cost_usd", "tokens", "holder"):  # holder: now, not the run
            del record[name]
        usage = result.usage.to_json()
        checkpoint = self.load_state(summary.run_id) if result.pending else None
        records = checkpoint.approvals if checkpoint is not None else {}
        # decisions on a paused run, taken before its resume (then they are on its steps)
        decided: JSONObject = {key: redact_json(a.to_json()) for key, a in records.items()}
        yield dumps({"type": "run", "schema": SCHEMA_VERSION, **record, "usage": usage,
                     "decisions": decided})  # fmt: skip
        before: Step | None = None
        for step in result.steps:
            since = 0 if full else step.new_messages_since(before)
            yield dumps({"type": "step", "run_id": summary.run_id, **step.to_json(since)})
            before = step


def _kept(run_id: str, checkpoint: Checkpoint | None) -> tuple[Checkpoint, JSONObject] | None:
    """``checkpoint`` with the rest of it as the run's row keeps it (no transcript, secrets
    redacted and kept aside: :func:`tao.store.private.keep`)."""
    if checkpoint is None:
        return None
    return checkpoint, private.keep(run_id, _without_messages(checkpoint))


def _without_messages(checkpoint: Checkpoint) -> JSONObject:
    return dataclasses.replace(checkpoint, messages=()).to_json()
