"""Write ``main-v4.db``: a run log exactly as tao wrote it at schema v4 (commit 28ab06f).

Schema v5 adds ``runs.parent_id`` (follow-up runs, issue 15); a log written before it
must keep working, and its runs must be continuable. Like ``make_old_log.py``, this
fixture is made by the *old* code, never by the code under test:

    mkdir /tmp/tao-v4 && git archive 28ab06f src | tar -x -C /tmp/tao-v4
    cd tests/store/data
    PYTHONPATH=/tmp/tao-v4/src python make_v4_log.py main-v4.db

It holds two runs made by the old ``Agent`` with ``record=True`` and ``replay:`` models
(stored as the relative ``replay:replies-N.json``):

* ``finished``: calc tools, "What is 17 * 23?" answered 391 in two steps;
* ``max_steps``: calc tools, ``max_steps=2``, the model never finishes.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

FINISHED = ["Thought: multiply.\nAction: calculator[17 * 23]", "Action: finish[391]"]
ENDLESS = ["Thought: again.\nAction: calculator[1 + 1]", "Action: calculator[2 + 2]"]


def main(out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="tao-v4-log-"))
    os.environ["TAO_HOME"] = str(work / "home")
    os.environ.pop("TAO_DATABASE_URL", None)
    os.chdir(work)
    from tao import Agent  # the old tao, from PYTHONPATH
    from tao.store import SCHEMA_VERSION

    assert SCHEMA_VERSION == 4
    for number, replies in enumerate((FINISHED, ENDLESS)):
        (work / f"replies-{number}.json").write_text(json.dumps(replies), encoding="utf-8")
    finished = Agent("replay:replies-0.json", ["calc"]).run("What is 17 * 23?")
    endless = Agent("replay:replies-1.json", ["calc"], max_steps=2).run("Count forever")
    statuses = [str(r.status) for r in (finished, endless)]
    assert statuses == ["finished", "max_steps"]

    db = work / "home" / "tao.db"
    out.unlink(missing_ok=True)
    source, copy = sqlite3.connect(db), sqlite3.connect(out)
    source.backup(copy)  # one self-contained file, the WAL folded in
    copy.execute("PRAGMA journal_mode = DELETE")
    copy.close()
    source.close()
    shutil.rmtree(work)
    print(f"{out}: {finished.run_id} {endless.run_id}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
