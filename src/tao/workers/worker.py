"""A worker: takes runs off a queue and continues each through tao's own resume (issue 28).

The mapping (docs/architecture.md, "Runs on a queue"):

- a run is a DBOS workflow on a DBOS queue; its id is the run id (``RUN_ID.N`` once the run
  was decided after a pause), its one argument the run id;
- the workflow itself (no DBOS step inside) continues the run exactly as ``tao resume``
  does: it takes the run's lease, reads its last checkpoint, and the journal decides what
  is done again (a side effect cut short goes to a person, a read-only call is redone,
  nothing twice). DBOS records no step of a run: tao's run log is the one source of truth;
- a run that pauses (``awaiting_approval``) or ends ends its workflow; a decision puts it
  back on the queue (:func:`tao.workers.queue.enqueue`);
- a worker that dies leaves its workflows ``PENDING`` under its executor id
  (``host:pid:random``, as a lease holder). Every live worker looks every few seconds
  (:meth:`Worker.sweep`): an executor whose process is gone (same host), or whose runs'
  leases ran out, is dead, and DBOS re-enqueues its workflows (its recovery: idempotent, one
  worker wins each); a live worker takes them and resumes each run from its checkpoint;
- told to stop (SIGTERM, Ctrl-C), a worker takes no new run, interrupts those it holds
  (recorded ``interrupted``, leases released), hands their workflows back to the queue, and
  ends: another worker goes on with them at once.

    Worker(queue="tao", concurrency=4).serve()            # until stop() / SIGTERM
    Worker(agent=lambda run_id: Agent(tools=[mine], ...)).serve()   # your own tools
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from dbos import DBOS

from tao.approval.decide import agent_for_run
from tao.errors import RunBusyError, TaoError
from tao.paths import lease_s
from tao.state.result import RunResult, Status
from tao.store.factory import open_store
from tao.store.lease import RENEWALS_PER_LEASE, Lease, holder_id
from tao.workers.queue import (
    APP_NAME,
    APP_VERSION,
    DEFAULT_QUEUE,
    WORKFLOW,
    need_dbos,
    run_of,
    system_database_url,
)

if TYPE_CHECKING:
    from dbos import WorkflowStatus

    from tao.agent import Agent, RunHandle
    from tao.store.base import Store

#: How often an idle worker asks the queue for work (seconds): the dequeue latency.
POLL_S = 0.05
#: DBOS's queue thread looks for newly registered queues once a second.
QUEUE_NOTICED_S = 1.1
#: How often a worker looks for the workflows of dead workers (seconds).
SWEEP_S = 2.0

#: The worker of this process (DBOS runs one application per process).
_current: Worker | None = None


class Worker:
    """Takes runs off ``queue``, ``concurrency`` at a time, until :meth:`stop`.

    ``agent`` builds the agent that continues a run (from its id): pass one where your own
    Python tools live. Without it, each run's agent is rebuilt from its recorded settings,
    as ``tao resume`` does. A worker has no person at hand: a call that needs one pauses its
    run (``awaiting_approval``) unless ``agent`` brings an approver.
    """

    def __init__(
        self,
        *,
        queue: str = DEFAULT_QUEUE,
        concurrency: int = 4,
        agent: Callable[[str], Agent] | None = None,
        store: Store | None = None,
        sweep_s: float = SWEEP_S,
    ) -> None:
        need_dbos()
        if concurrency < 1:
            raise ValueError("concurrency must be 1 or more")
        self.queue, self.concurrency, self.sweep_s = queue, concurrency, sweep_s
        self._agent = agent
        self.store: Store = store if store is not None else open_store()
        #: This worker's DBOS executor id, shaped like a lease holder (``host:pid:random``).
        self.id = holder_id()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._held: dict[str, RunHandle] = {}
        self._busy = 0  # workflows inside continue_run now
        self._parked = 0  # of which stopped for good (handed back on exit)

    # -- serving ---------------------------------------------------------------------------

    def serve(self, *, ready: Callable[[], None] | None = None) -> None:
        """Take runs until :meth:`stop`; then end cleanly (see the module's docstring).

        With runs still held when told to stop, the process ends here (``os._exit(0)``,
        after everything is recorded): their threads are parked inside DBOS, and a clean
        interpreter exit would wait for them forever."""
        global _current
        if _current is not None:
            raise RuntimeError("one worker per process: DBOS runs one application")
        _current = self
        DBOS(
            config={
                "name": APP_NAME,
                "system_database_url": system_database_url(),
                "application_version": APP_VERSION,
                "executor_id": self.id,
                "log_level": "WARNING",
                # DBOS pings each pooled connection before every transaction (a round trip
                # each); a dropped connection is seen by the statement itself, and DBOS's
                # own retry takes a fresh one.
                "db_engine_kwargs": {"pool_pre_ping": False},
            }
        )
        DBOS.listen_queues([self.queue])
        DBOS.launch()
        DBOS.register_queue(
            self.queue, worker_concurrency=self.concurrency, polling_interval_sec=POLL_S
        )
        if ready is not None:
            self._stopping.wait(QUEUE_NOTICED_S)  # DBOS's queue thread has seen the queue
            ready()
        while not self._stopping.wait(self.sweep_s):
            self.sweep()
        self._shutdown()

    def stop(self) -> None:
        """Stop taking runs and end (from any thread, or a signal handler)."""
        self._stopping.set()

    def _shutdown(self) -> None:
        _stop_dequeuing()  # the queue thread first: no run is taken from now on
        with self._lock:
            held = list(self._held.values())
        for handle in held:
            handle.interrupt()  # recorded as interrupted, its lease released
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:
            with self._lock:
                if self._parked >= self._busy:
                    break
            time.sleep(0.02)
        with self._lock:
            parked = self._parked
        if parked:
            _hand_back([self.id])  # back on the queue, for another
        DBOS.destroy()
        if parked:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)

    # -- one run ---------------------------------------------------------------------------

    def continue_run(self, run_id: str) -> str:
        """The workflow's body: continue the run until it ends or pauses; its status."""
        with self._lock:
            self._busy += 1
        try:
            while not self._stopping.is_set():
                result = self._attempt(run_id)
                if result is None:  # another process holds it: wait for its lease
                    self._stopping.wait(lease_s() / RENEWALS_PER_LEASE)
                    continue
                if isinstance(result, str):
                    return result
                if result.status is not Status.INTERRUPTED or not self._stopping.is_set():
                    return str(result.status)
                break
            self._park()
        finally:
            with self._lock:
                self._busy -= 1
        return ""  # never reached: a parked workflow waits for the process to end

    def _attempt(self, run_id: str) -> RunResult | str | None:
        """One go at the run: its result; ``None`` while another process holds it; the
        status it already has (a string) when it cannot be continued."""
        try:
            agent = self._agent(run_id) if self._agent else agent_for_run(run_id, store=self.store)
            if agent.record is True:  # the default run log: this worker's connection, not one more
                agent.record = self.store
            handle = agent.start_resume(run_id)
        except RunBusyError:
            return None
        except TaoError as error:  # ended already (a second delivery), or cannot be rebuilt
            return self._cannot(run_id, error)
        with self._lock:
            self._held[run_id] = handle
        try:
            return handle.result()
        except RunBusyError:  # lost its lease while stopped (SIGSTOP): another has it now
            return None
        finally:
            with self._lock:
                self._held.pop(run_id, None)

    def _cannot(self, run_id: str, error: TaoError) -> str:
        """A run this worker cannot continue: one never started ends as ``error`` saying
        why (else it would wait forever); any other keeps the status it has."""
        try:
            result = self.store.get_run(run_id)
            if result.status is Status.QUEUED:
                result.status, result.error = Status.ERROR, f"no worker could run it: {error}"
                self.store.finish_run(result, result.config, begun=True)
            return str(result.status)
        except TaoError:
            return "unknown"

    def _park(self) -> None:
        with self._lock:
            self._parked += 1
        threading.Event().wait()  # until the process ends; its workflow goes back to the queue

    # -- recovery --------------------------------------------------------------------------

    def sweep(self) -> list[str]:
        """Hand the workflows of dead workers back to the queue; their executor ids."""
        try:
            pending = DBOS.list_workflows(
                status="PENDING", queue_name=self.queue, load_input=False, load_output=False
            )
            dead = sorted(
                {
                    flow.executor_id
                    for flow in pending
                    if flow.executor_id and flow.executor_id != self.id and self._gone(flow)
                }
            )
            if dead:
                _hand_back(dead)
        except Exception:  # the database is away: looked at again next time
            return []
        return dead

    def _gone(self, flow: WorkflowStatus) -> bool:
        """Whether the worker running ``flow`` is dead: its process is gone (this host), or
        the run's lease ran out and the workflow has not moved for a lease's time."""
        executor = Lease(str(flow.executor_id), 0.0, 0.0)
        if executor.dead():
            return True
        held = self.store.get_lease(run_of(flow.workflow_id))
        now = time.time()
        if held is not None and held.until >= now and not held.dead():
            return False
        return (flow.updated_at or 0) / 1000 < now - lease_s()


# -- the two DBOS internals (3.4.0) the worker needs; tests/workers/test_dbos_internals.py
# pins both, and docs/architecture.md says why no public call does the job.


def _stop_dequeuing() -> None:
    """Stop DBOS's background threads (its queue thread among them) while DBOS stays up.

    DBOS 3.4.0 has no public "stop dequeuing": ``DBOS.destroy`` also stops the threads, but
    it closes the system database too, and the worker still needs it afterwards to hand its
    interrupted runs' workflows back. So the worker sets the same stop events that
    ``DBOS.destroy`` sets, before it interrupts its runs.
    """
    from dbos._dbos import _get_dbos_instance

    for event in _get_dbos_instance().background_thread_stop_events:
        event.set()


def _hand_back(executor_ids: list[str]) -> None:
    """Put the ``PENDING`` workflows of ``executor_ids`` back on their queue.

    The public ``DBOS.resume_workflows`` re-enqueues unconditionally; DBOS's recovery
    re-enqueues a workflow only while its executor id is still one of ``executor_ids``. That
    condition is what makes two workers sweeping the same dead worker safe: once one live
    worker has dequeued a workflow (its executor id changes), the other's recovery matches
    nothing, where a resume would put the running workflow back on the queue a second time.
    """
    DBOS._recover_pending_workflows(executor_ids)


@DBOS.workflow(name=WORKFLOW)
def _run(run_id: str) -> str:
    """A run on the queue: continued through tao's resume, in the workflow itself.

    No DBOS step inside: a step would only add two rows a run (its check before, its
    output after) that nothing reads, since a recovered workflow runs this again and tao's
    journal, not DBOS's replay, decides what is done again (a run that already ended
    answers with its status)."""
    worker = _current
    if worker is None:
        raise RuntimeError("a tao run was dequeued outside a worker")
    return worker.continue_run(run_id)
