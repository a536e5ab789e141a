"""Where tao keeps its files: the home folder, the run log, the policy (SPEC M3, S3).

Every module that needs one of these asks here, so the environment variables are
read in one place and no layer reaches into another (the policy used to import
the run log's SQLite module just to find ``$TAO_HOME``).

    tao_home()            # $TAO_HOME, else platformdirs.user_data_dir("tao")
    default_db_path()     # $TAO_HOME/tao.db
    database_url()        # $TAO_DATABASE_URL, or None: the run log in PostgreSQL
    default_policy_path() # $TAO_POLICY, else $TAO_HOME/policy.toml
    store_retry_s()       # $TAO_STORE_RETRY_S: how long a lost database is retried (10 s)

Nothing here creates a folder or a file; the code that writes there does.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

#: The folder for the run log, the policy and eval results.
HOME_ENV = "TAO_HOME"
#: Set to ``postgresql://user:password@host:port/db`` to keep the run log in PostgreSQL.
DATABASE_URL_ENV = "TAO_DATABASE_URL"
#: A policy file to use instead of ``$TAO_HOME/policy.toml``.
POLICY_ENV = "TAO_POLICY"
#: Set to 1 to accept a policy file that lies inside the project (``--trust-project-policy``).
TRUST_PROJECT_POLICY_ENV = "TAO_TRUST_PROJECT_POLICY"


def tao_home() -> Path:
    """``$TAO_HOME``; unset or empty, the platform's user data folder for ``tao``."""
    return _home(os.environ.get(HOME_ENV) or None)


@lru_cache(maxsize=8)
def _home(home: str | None) -> Path:
    """Resolved once per value: the run log asks for every checkpoint, and platformdirs'
    lookup cost more than the rest of a logged step."""
    if home is None:
        import platformdirs  # only when needed: it costs import time on every ``tao`` call

        home = platformdirs.user_data_dir("tao")
    return Path(home).expanduser()


def default_db_path() -> Path:
    """``$TAO_HOME/tao.db``: the SQLite run log used when no database URL is set."""
    return tao_home() / "tao.db"


def database_url() -> str | None:
    """``$TAO_DATABASE_URL`` without surrounding blanks, or ``None`` when unset or empty."""
    return os.environ.get(DATABASE_URL_ENV, "").strip() or None


def default_policy_path() -> Path:
    """``$TAO_POLICY`` if set, else ``$TAO_HOME/policy.toml`` (which may not exist)."""
    chosen = os.environ.get(POLICY_ENV)
    return Path(chosen).expanduser() if chosen else tao_home() / "policy.toml"


#: Seconds a lost connection to the run log's database is retried before a write fails.
STORE_RETRY_ENV = "TAO_STORE_RETRY_S"
DEFAULT_STORE_RETRY_S = 10.0


def store_retry_s() -> float:
    """``$TAO_STORE_RETRY_S`` as seconds (0 = fail at once); unset or not a number: 10."""
    try:
        value = float(os.environ.get(STORE_RETRY_ENV, "").strip() or DEFAULT_STORE_RETRY_S)
    except ValueError:
        return DEFAULT_STORE_RETRY_S
    return value if value >= 0 else DEFAULT_STORE_RETRY_S
