"""The run log (SPEC M3): every run, step and model call, in SQLite or PostgreSQL.

    from tao.store import RunRecorder, Store

    store = open_store()        # $TAO_HOME/tao.db, or TAO_DATABASE_URL's PostgreSQL
    agent.run(task, observers=[RunRecorder(store, agent.config)])
    store.list_runs(limit=5)
    store.find_runs(RunQuery(text="README", status="finished", offset=20))
    store.get_run("3f2a")       # a unique id prefix is enough

:class:`Store` is the interface (:mod:`tao.store.base`); :class:`SQLiteStore`
implements it here, ``tao.store.postgres.PostgresStore`` (psycopg, an optional
extra) on a server.
"""

from __future__ import annotations

from tao.paths import default_db_path
from tao.store.base import Store
from tao.store.factory import open_store
from tao.store.query import STATUSES, RunPage, RunQuery, RunSummary
from tao.store.recorder import RunRecorder
from tao.store.schema import SCHEMA_VERSION
from tao.store.sqlite import SQLiteStore

__all__ = [
    "SCHEMA_VERSION",
    "STATUSES",
    "RunPage",
    "RunQuery",
    "RunRecorder",
    "RunSummary",
    "SQLiteStore",
    "Store",
    "default_db_path",
    "open_store",
]
