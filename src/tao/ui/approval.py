"""Approve or deny a paused run from the web page, exactly as the CLI does (SPEC S3, M3).

    Approve  =  tao runs approve RUN_ID --call ID   then   tao resume RUN_ID   (in the background)
    Deny     =  tao runs deny RUN_ID --call ID --reason TEXT   then   tao resume RUN_ID

A decision names the exact calls the person saw (``PendingCall.id``); when the
run has moved on, :func:`tao.approval.decide.approve_run` refuses with :class:`tao.ResumeError`.

The decision is recorded by :func:`tao.approval.decide.approve_run` / ``deny_run`` (the
functions behind those commands), then ``tao resume RUN_ID`` runs as a
child process with no terminal, so a resumed run that reaches another
dangerous call pauses again instead of blocking the server. The child's output
goes to a temporary file; if it fails, the last lines are shown on the run's page.

The child is the installed tao under an isolated interpreter, in an empty folder of
its own, without loader variables (:mod:`tao.sandbox.selfrun`, SPEC S10): the page is started
in a project folder, and a ``tao.py`` or ``sitecustomize.py`` there must never run in
its stead with the user's keys.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from tao.approval import decide as approvals
from tao.format import labels_for
from tao.protocol.text import parse_reply
from tao.redact.marker import REDACTED
from tao.redact.scan import redact
from tao.redact.structured import redact_json
from tao.sandbox.selfrun import empty_folder, loader_free_environment, remove_folder, tao_command
from tao.state.config import Approval, Checkpoint, PendingCall, Via
from tao.state.jsontypes import JSON, JSONObject
from tao.state.result import RunResult, Status

if TYPE_CHECKING:  # handed an open run log (tao.store.factory); only its type is named
    from tao.store.base import Store

_FAILURE_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class ShownCall:
    """A waiting call as a person is shown it: its arguments and preview redacted (SPEC S8,
    S11), its id the real call's, so a decision still names the exact call that runs with
    its real arguments (SPEC S7)."""

    id: str
    tool: str
    arguments: JSONObject
    effects: tuple[str, ...]
    preview: str | None
    warning: str | None
    #: How many values were hidden from the arguments and preview.
    hidden: int
    #: The child run that holds the call, when a child run paused this one (issue 31).
    child_run: str | None = None
    #: Which of this run's calls started that child, in words.
    origin: str | None = None


def shown_call(call: PendingCall) -> ShownCall:
    """``call`` with every secret in its arguments and preview replaced by ``[REDACTED]``."""
    arguments = redact_json(call.arguments)
    preview = None if call.preview is None else redact(call.preview)
    hidden = _hidden(call.arguments, arguments) + _hidden(call.preview, preview)
    shown = arguments if isinstance(arguments, dict) else {}
    child = call.child.run_id if call.child is not None else None
    return ShownCall(
        call.id, call.tool, shown, call.effects, preview, call.warning, hidden, child, call.origin
    )


def _hidden(before: JSON | None, after: JSON | None) -> int:
    """Markers in ``after`` that were not in ``before``: the values hidden."""
    return str(after).count(REDACTED) - str(before).count(REDACTED)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pending:
    """A run paused with status ``awaiting_approval``, the calls it waits on, and the
    model's reply that asked for them (its Thought says why)."""

    run_id: str
    task: str
    #: The calls, redacted as shown (the real ones stay in the run's private checkpoint).
    calls: tuple[ShownCall, ...]
    #: The text of the reply that asked for the calls.
    reply: str | None = None
    #: That reply's Thought: why the model wants the calls.
    thought: str | None = None
    #: A decision already recorded (``tao runs approve`` without ``tao resume`` yet).
    decided: str | None = None
    #: Who took those decisions, when and from where.
    records: tuple[Approval, ...] = ()


def _decided(checkpoint: Checkpoint | None) -> str | None:
    """``approved`` when every recorded decision approves, ``denied`` if any refuses."""
    decisions = list(checkpoint.decisions.values()) if checkpoint is not None else []
    if not decisions:
        return None
    return "approved" if all(decision is True for decision in decisions) else "denied"


def pending_of(store: Store, result: RunResult) -> Pending | None:
    """The waiting calls of a run read with :meth:`Store.get_run`, or ``None``; every text in
    it redacted, as on every surface (SPEC S8, S11): the store hands back the real calls."""
    if result.status != Status.AWAITING_APPROVAL or not result.pending:
        return None
    checkpoint = store.load_state(result.run_id)
    reply = checkpoint.reply if checkpoint is not None else None
    thought = None
    if reply is not None:
        native = bool(reply.tool_calls)
        parsed = None if native else parse_reply(reply.text, labels_for(result.lang))
        thought = reply.text.strip() or None if parsed is None else parsed.thought
    held = [call for call in result.pending if call.child is not None and call.thought]
    if held:  # a child run's call: the child's Thought says why (issue 31)
        thought = held[0].thought
    return Pending(
        run_id=result.run_id,
        task=redact(result.task),
        calls=tuple(shown_call(call) for call in result.pending),
        reply=redact(reply.text) if reply is not None else None,
        thought=None if thought is None else redact(thought),
        decided=_decided(checkpoint),
        records=tuple(checkpoint.approvals.values()) if checkpoint is not None else (),
    )


def all_pending(store: Store, limit: int = 50) -> list[Pending]:
    """Every run waiting for a person, newest first."""
    found = []
    for summary in store.list_runs(limit=limit, status=Status.AWAITING_APPROVAL):
        item = pending_of(store, store.get_run(summary.run_id))
        if item is not None:
            found.append(item)
    return found


@dataclass(frozen=True, slots=True)
class _Child:
    process: subprocess.Popen[bytes]
    output: IO[bytes]
    #: Its working folder: empty, its own, removed when it is reaped.
    folder: Path


class Resumer:
    """Records decisions and resumes runs in child processes; thread-safe."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._children: dict[str, _Child] = {}
        self._failures: dict[str, str] = {}
        self._lock = threading.Lock()

    def decide(
        self,
        run_id: str,
        calls: list[str],
        *,
        approve: bool,
        reason: str | None = None,
        via: Via = "web",
    ) -> str:
        """Record the decision on exactly ``calls`` (:class:`tao.ResumeError` when one is no
        longer pending, or the run is not waiting), then, once every waiting call is
        decided, resume the run in the background. Returns the full run id.

        The record names ``via`` (the page's form: ``web``, its JSON endpoint: ``api``) and,
        as who, the OS user serving the page: it answers on 127.0.0.1 only, to the holder of
        its per-process token, so that is the person deciding."""
        store = self.store
        if approve:
            run_id = approvals.approve_run(run_id, calls=calls, store=store, via=via, reason=reason)
        else:
            run_id = approvals.deny_run(run_id, reason, calls=calls, store=store, via=via)
        waiting = approvals.pending_calls(run_id, store=self.store)
        if all(item.decision is not None for item in waiting):
            self._start(run_id)
        return run_id

    def _start(self, run_id: str) -> None:
        with self._lock:
            self._reap()
            if run_id in self._children:
                return  # already resuming; the decision is read from the log
            output = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the child is reaped
            folder = empty_folder("tao-resume-")
            try:
                process = subprocess.Popen(
                    tao_command("resume", run_id, "--no-input"),
                    cwd=folder,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    env=loader_free_environment(NO_COLOR="1"),
                    start_new_session=True,  # Ctrl+C on `tao ui` does not cut a resumed run short
                )
            except OSError:
                output.close()
                remove_folder(folder)
                raise
            self._failures.pop(run_id, None)
            self._children[run_id] = _Child(process, output, folder)

    def busy(self, run_id: str) -> bool:
        """Whether a resume of this run is still running."""
        with self._lock:
            self._reap()
            return run_id in self._children

    def failure(self, run_id: str) -> str | None:
        """The end of a failed resume's output, to show on the run's page."""
        with self._lock:
            self._reap()
            return self._failures.get(run_id)

    def _reap(self) -> None:
        for run_id, child in list(self._children.items()):
            code = child.process.poll()
            if code is None:
                continue
            del self._children[run_id]
            remove_folder(child.folder)
            child.output.seek(0)
            text = child.output.read().decode("utf-8", "replace").strip()
            child.output.close()
            if code != 0 and ("Traceback" in text or text.startswith("Error")):
                self._failures[run_id] = f"resuming failed (exit {code}): {text[-_FAILURE_CHARS:]}"

    def wait(self, timeout: float) -> None:
        """Let resumes finish (tests, shutdown); those still running are left running."""
        with self._lock:
            children = list(self._children.values())
        for child in children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.process.wait(timeout)
        with self._lock:
            self._reap()
