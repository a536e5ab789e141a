"""Putting a run on a queue of workers (issue 28): the run log's row, then a DBOS workflow.

A submitted run is a row of the run log with status ``queued`` (its task and
:class:`~tao.state.config.RunConfig`, no step) and a DBOS workflow of the same id on a
DBOS queue, which continues the run through tao's resume. DBOS keeps its own
tables (schema ``dbos``) in the run log's database: ``TAO_DATABASE_URL``'s PostgreSQL,
or ``$TAO_HOME/queue.sqlite`` beside the SQLite run log on one machine.

A run paused for approval ends its workflow; a decision (from any process) puts it back
on its queue as a new workflow ``RUN_ID.N`` (:func:`enqueue` with ``again``), which any
free worker takes.

    run_id = submit_run(store, "summarise the logs", "local", config)
"""

from __future__ import annotations

import secrets
import threading
from typing import TYPE_CHECKING

from tao.errors import ConfigError, StoreError
from tao.paths import database_url, private_dir, tao_home
from tao.run.setup import begin
from tao.state.config import RunConfig
from tao.state.result import Status

if TYPE_CHECKING:
    from dbos import DBOSClient

    from tao.store.base import Store

#: The DBOS application every tao process names: workers dequeue only its workflows.
APP_NAME = "tao"
#: The version of the workflow below (its name and argument): workers of any tao release
#: that keep this contract take each other's runs, and recover each other's.
APP_VERSION = "tao-run-1"
#: The one workflow: its argument is the run id; it continues the run, returns its status.
WORKFLOW = "tao.run"
#: The queue a run goes to unless ``--queue`` names another.
DEFAULT_QUEUE = "tao"
#: A workflow id ``RUN_ID.N`` is the run's Nth time on the queue (after an approval).
AGAIN = "."

_clients: dict[str, DBOSClient] = {}
_clients_lock = threading.Lock()


def system_database_url() -> str:
    """Where DBOS keeps its tables: the PostgreSQL run log's database, else a SQLite file
    beside the SQLite run log (one machine)."""
    url = database_url()
    if url:
        return url
    return f"sqlite:///{private_dir(tao_home()) / 'queue.sqlite'}"


def need_dbos() -> None:
    """Refuse clearly when the optional extra is missing."""
    try:
        import dbos  # noqa: F401
    except ImportError:
        raise ConfigError("the queue of runs needs DBOS: pip install 'tao[workers]'") from None


def client() -> DBOSClient:
    """This process's DBOS client for the queue's database, its tables created on first use
    (a client alone never creates them; the first ``tao submit`` may come before any worker)."""
    need_dbos()
    from dbos import DBOS, DBOSClient

    url = system_database_url()
    with _clients_lock:
        made = _clients.get(url)
        if made is None:
            DBOS.migrate(url)  # public and idempotent; DBOS's own launch does the same
            made = DBOSClient(system_database_url=url, application_name=APP_NAME)
            _clients[url] = made
        return made


def enqueue(run_id: str, queue: str | None, *, again: bool = False) -> str:
    """Put the run's workflow on ``queue``; ``again``: a run already queued once (decided
    after a pause) gets a new workflow id. Returns the workflow id."""
    workflow_id = f"{run_id}{AGAIN}{secrets.token_hex(4)}" if again else run_id
    try:
        client().enqueue(
            {
                "workflow_name": WORKFLOW,
                "queue_name": queue or DEFAULT_QUEUE,
                "workflow_id": workflow_id,
                "app_version": APP_VERSION,
            },
            run_id,
        )
    except ConfigError:
        raise
    except Exception as error:  # DBOS and SQLAlchemy raise their own trees
        raise StoreError(f"run {run_id}: could not put it on the queue: {error}") from None
    return workflow_id


def run_of(workflow_id: str) -> str:
    """The run a workflow continues."""
    return workflow_id.split(AGAIN, 1)[0]


def submit_run(
    store: Store, task: str, model_name: str, config: RunConfig, queue: str | None = None
) -> str:
    """Record ``task`` as a ``queued`` run and put it on ``queue``; returns its run id.

    The row comes first, so a worker never takes a run the log does not know; a queue that
    cannot be reached ends the row as ``error`` saying so (nothing is left ``queued`` that no
    worker will ever take)."""
    need_dbos()
    config = config.replace(queue=queue or config.queue or DEFAULT_QUEUE)
    start = begin(task, model_name, config)
    result = start.result
    result.status = Status.QUEUED
    store.queue_run(result, config)
    try:
        enqueue(result.run_id, config.queue)
    except StoreError as error:
        result.status, result.error = Status.ERROR, str(error)
        store.finish_run(result, config, begun=True)
        raise
    return result.run_id
