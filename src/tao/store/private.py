"""The part of a checkpoint that must not be redacted, kept where only its owner can read it.

The run log is redacted (SPEC S8), but resuming needs what the model really asked
for: an approved ``write_file`` must write the real content, not ``[REDACTED]``
(redaction never changes what a tool does). When a checkpoint's reply or pending
arguments hold a secret, the log keeps the redacted form and this module keeps
the real one in ``$TAO_HOME/private/RUN_ID.json``, readable by its owner alone
(mode 0600, in a 0700 folder). Without such a file, the log's copy is used.
"""

from __future__ import annotations

import contextlib
import json
from functools import lru_cache
from pathlib import Path
from typing import cast

from tao.paths import private_dir, private_open, tao_home
from tao.redact.structured import redact_json
from tao.state.jsontypes import JSON, JSONObject


def _path(run_id: str) -> Path:
    return _file(tao_home(), run_id)


@lru_cache(maxsize=64)
def _file(home: Path, run_id: str) -> Path:
    """Made once per run: every checkpoint asks, and pathlib's joins are slow."""
    safe = "".join(c for c in run_id if c.isalnum())
    return home / "private" / f"{safe}.json"


#: Private files known not to exist, so that a checkpoint without secrets (nearly all
#: of them) costs no system call; forgotten when this process writes the file.
_ABSENT: set[Path] = set()


def keep(run_id: str, state: JSONObject) -> JSONObject:
    """What the log may store of ``state``; the real values go to the private file."""
    shown = cast(JSONObject, redact_json(state))
    path = _path(run_id)
    if shown == state:
        if path not in _ABSENT:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            _ABSENT.add(path)
        return state
    _ABSENT.discard(path)
    private_dir(path.parent)
    with open(path, "w", encoding="utf-8", opener=private_open) as handle:
        json.dump(state, handle, ensure_ascii=False)
    return shown


def restore(run_id: str, stored: JSONObject) -> JSONObject:
    """The checkpoint's real reply and pending calls, where the private file has them."""
    path = _path(run_id)
    _ABSENT.discard(path)  # another process may have written it since this one looked
    try:
        data: JSON = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, OSError):
        return stored
    if not isinstance(data, dict):
        return stored
    kept = ("reply", "pending", "approved")  # approved: file names are facts, never redacted
    return {**stored, **{key: data[key] for key in kept if key in data}}
