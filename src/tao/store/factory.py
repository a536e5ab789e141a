"""Opening the run log: the one place that knows every backend (SPEC M3, R4).

It sits above :mod:`tao.store.base` and the backends, so the interface never imports
its implementations: ``TAO_DATABASE_URL`` (``postgresql://…``) selects PostgreSQL
(psycopg, an optional extra, imported only then), anything else the SQLite file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tao.errors import StoreError
from tao.paths import DATABASE_URL_ENV, database_url

if TYPE_CHECKING:  # the interface only names the result: each backend is loaded when opened
    from tao.store.base import Store


def open_store(path: Path | str | None = None) -> Store:
    """Open (creating and migrating if needed) the run log.

    ``path`` names an SQLite file. Without it, ``TAO_DATABASE_URL``
    (``postgresql://…``) selects PostgreSQL, else ``$TAO_HOME/tao.db``.
    """
    url = database_url()
    if path is None and url:
        try:  # psycopg is an optional extra, imported only when asked for
            from tao.store.postgres import PostgresStore
        except ImportError:
            raise StoreError(
                f"{DATABASE_URL_ENV} selects PostgreSQL, which needs psycopg: "
                "pip install 'tao[postgres]' (or unset it to use the SQLite run log)"
            ) from None
        return PostgresStore.connect(url)
    from tao.store.sqlite import SQLiteStore

    return SQLiteStore.connect(path)
