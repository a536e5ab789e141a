"""Write ``main-0.1.db``: a run log exactly as tao 0.1 (commit 54f3c31) wrote it.

The new store must keep reading logs that people already have (issue 11: "a run
log written by today's main lists, shows and resumes"), so this fixture is made
by the *old* code, never by the code under test. Regenerate it only if it is
lost; its bytes are the point:

    git worktree add /tmp/old-tao 54f3c31
    cd tests/store/data
    PYTHONPATH=/tmp/old-tao/src python make_old_log.py main-0.1.db
    git worktree remove /tmp/old-tao

It holds four runs, each made by the old ``Agent`` with ``record=True`` in a
throwaway ``TAO_HOME``, with ``replay:`` models (the model spec is stored as the
relative ``replay:replies-N.json``, so a test can put a replies file beside it):

* ``finished``: calc tools, "What is 17 * 23 + 4?" answered 395 in two steps;
* ``max_steps``: calc tools, ``max_steps=2``, the model never finishes;
* ``awaiting_approval`` (task "write notes"): ``write`` tools, a ``write_file``
  call of notes.txt waiting for a person, no decision yet;
* ``awaiting_approval`` (task "write approved notes"): the same, then approved
  with the old ``approve_run``, so its checkpoint keys the decision by position
  (``{"0": true}``), the version-0 shape that ``Checkpoint.from_json`` migrates.

The write runs' ``project`` is recorded as an absolute temporary folder that no
longer exists; a test that resumes them must give a project of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

FINISHED = ["Thought: multiply first.\nAction: calculator[17 * 23]", "Action: finish[395]"]
ENDLESS = ["Thought: again.\nAction: calculator[1 + 1]"] * 3
WRITE = [
    'Thought: write it.\nAction: write_file(path="notes.txt", content="hello\\n")',
    "Thought: done.\nAction: finish[written]",
]


def main(out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="tao-old-log-"))
    os.environ["TAO_HOME"] = str(work / "home")
    os.environ.pop("TAO_DATABASE_URL", None)
    os.chdir(work)
    from tao import Agent  # the old tao, from PYTHONPATH
    from tao.approval.decide import approve_run

    project = work / "project"
    project.mkdir()
    for number, replies in enumerate((FINISHED, ENDLESS, WRITE, WRITE)):
        (work / f"replies-{number}.json").write_text(json.dumps(replies), encoding="utf-8")

    finished = Agent("replay:replies-0.json", ["calc"]).run("What is 17 * 23 + 4?")
    endless = Agent("replay:replies-1.json", ["calc"], max_steps=2).run("Count forever")
    waiting = Agent("replay:replies-2.json", ["write"], project=project).run("write notes")
    approved = Agent("replay:replies-3.json", ["write"], project=project).run(
        "write approved notes"
    )
    approve_run(approved.run_id)
    statuses = [str(r.status) for r in (finished, endless, waiting, approved)]
    assert statuses == ["finished", "max_steps", "awaiting_approval", "awaiting_approval"]

    db = work / "home" / "tao.db"
    out.unlink(missing_ok=True)
    source, copy = sqlite3.connect(db), sqlite3.connect(out)
    source.backup(copy)  # one self-contained file, the WAL folded in (the agents keep it open)
    copy.execute("PRAGMA journal_mode = DELETE")
    copy.close()
    source.close()
    shutil.rmtree(work)
    print(f"{out}: {', '.join(statuses)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
