"""Where tao keeps its files: the home folder, the run log, the policy (SPEC M3, S3).

Every module that needs one of these asks here, so the environment variables are
read in one place and no layer reaches into another (the policy used to import
the run log's SQLite module just to find ``$TAO_HOME``).

    tao_home()            # $TAO_HOME, else platformdirs.user_data_dir("tao")
    default_db_path()     # $TAO_HOME/tao.db
    database_url()        # $TAO_DATABASE_URL, or None: the run log in PostgreSQL
    default_policy_path() # $TAO_POLICY, else $TAO_HOME/policy.toml
    store_retry_s()       # $TAO_STORE_RETRY_S: how long a lost database is retried (10 s)
    lease_s()             # $TAO_LEASE_S: how long a run's lease lasts unrenewed (30 s)

Everything tao writes under ``$TAO_HOME`` is its owner's alone (run logs hold tasks,
answers and approvals): :func:`private_dir` makes folders 0700 and :func:`private_open`
files 0600, whatever the umask, and an existing ``$TAO_HOME`` that others can read is
tightened (or, when it is not tao's to change, warned about).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
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


#: Seconds a run's lease lasts without being renewed (SPEC R5); the holder renews it six
#: times as often, so a live process never loses it and a killed one frees it this soon.
LEASE_ENV = "TAO_LEASE_S"
DEFAULT_LEASE_S = 30.0


def lease_s() -> float:
    """``$TAO_LEASE_S`` as seconds (at least 0.5); unset or not a number: 30."""
    try:
        value = float(os.environ.get(LEASE_ENV, "").strip() or DEFAULT_LEASE_S)
    except ValueError:
        return DEFAULT_LEASE_S
    return max(value, 0.5) if value == value else DEFAULT_LEASE_S  # NaN: the default


#: Permission bits tao never leaves on what it writes under ``$TAO_HOME``.
_OTHERS = stat.S_IRWXG | stat.S_IRWXO
_log = logging.getLogger("tao")


def private_dir(path: Path) -> Path:
    """``path`` as an owner-only folder (0700): made if missing, tightened if tao's own.

    Missing parents above it are made as usual (they may be shared, like
    ``~/.local/share``). An existing folder that others can read is tightened when
    it belongs to this user and is ``$TAO_HOME`` or inside it. A ``$TAO_HOME`` that
    is not tao's to change (the user's home folder, a shared ``/tmp``, another
    user's) is left alone with a warning; its files are still 0600.
    """
    path = _abs(path)
    home = _abs(tao_home())
    if path != home and path.is_relative_to(home):
        private_dir(path.parent)  # $TAO_HOME and every folder down to this one: 0700
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.stat(path)
    if info.st_mode & _OTHERS:
        if _ours_to_tighten(path, info):
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~_OTHERS)
            if path == home:
                _tighten_tree(path)
                _log.warning(
                    "tao: %s was readable by other users (mode %o); made it and its "
                    "content owner-only (700/600)",
                    path,
                    stat.S_IMODE(info.st_mode),
                )
        elif path == home:
            _log.warning(
                "tao: %s is readable by other users (mode %o) and tao does not change it; "
                "set TAO_HOME to a folder only you can read",
                path,
                stat.S_IMODE(info.st_mode),
            )
    return path


def _tighten_tree(home: Path) -> None:
    """What an older tao left readable under ``home``: folders and files, links not followed."""
    for folder, dirs, files in os.walk(home):
        for name in [*dirs, *files]:
            entry = os.path.join(folder, name)
            with contextlib.suppress(OSError):
                info = os.lstat(entry)
                mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
                plain = stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)
                if plain and mine and info.st_mode & _OTHERS:
                    os.chmod(entry, stat.S_IMODE(info.st_mode) & ~_OTHERS)


def _abs(path: Path) -> Path:
    return Path(os.path.abspath(path.expanduser()))


def _ours_to_tighten(path: Path, info: os.stat_result) -> bool:
    """tao's own folder: this user's, not the home folder, not a sticky shared one, and
    ``$TAO_HOME`` or under it (a new folder tao just made is 0700 already)."""
    if not hasattr(os, "getuid") or info.st_uid != os.getuid() or info.st_mode & stat.S_ISVTX:
        return False
    if path == _abs(Path.home()):
        return False
    return path.is_relative_to(_abs(tao_home()))


def private_open(path: str | os.PathLike[str], flags: int) -> int:
    """An ``opener`` for :func:`open`: a new file is 0600; an existing one others could read
    is tightened to 0600 (tao made it). ``open(p, "a", opener=private_open)``."""
    fd = os.open(path, flags, 0o600)
    try:
        tighten(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def tighten(target: int | str | os.PathLike[str]) -> None:
    """Remove group and other permissions from a regular file tao wrote (a descriptor or a
    path); a terminal, a pipe or ``/dev/null`` given as an output is left alone."""
    info = os.stat(target)
    mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    if stat.S_ISREG(info.st_mode) and info.st_mode & _OTHERS and mine:
        os.chmod(target, stat.S_IMODE(info.st_mode) & ~_OTHERS)
