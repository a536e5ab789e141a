"""The run log (SPEC M3): every run, step and model call, in SQLite under ``$TAO_HOME``.

from tao.store import RunRecorder, Store

store = Store.open()                       # $TAO_HOME/tao.db
agent.run(task, observers=[RunRecorder(store)])
store.list_runs(limit=5)
store.get_run("3f2a")                      # a unique id prefix is enough
"""

from __future__ import annotations

from tao.store.recorder import RunRecorder
from tao.store.rows import INTERRUPTED, STATUSES, RunSummary
from tao.store.schema import RUNNING, SCHEMA_VERSION
from tao.store.sqlite import Store, default_db_path

__all__ = [
    "INTERRUPTED",
    "RUNNING",
    "SCHEMA_VERSION",
    "STATUSES",
    "RunRecorder",
    "RunSummary",
    "Store",
    "default_db_path",
]
