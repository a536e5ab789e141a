"""Runs per second of a queue of runs with 1, 2 and 4 worker processes (issue 28).

Each worker is ``tests/workers/app.py worker C``: a user's own process with a scripted
model that answers every call after ``--latency`` seconds (200 ms), three calls a run
(a side effect that runs a child ``sleep 0``, a read-only call, the answer). The workers
start first and wait; then ``--runs`` runs are submitted at once and the clock runs until
the last one is ``finished`` in the run log. A fresh PostgreSQL database each time
(``TAO_TEST_DATABASE_URL``: ``eval "$(bash scripts/start-postgres.sh)"``).

"Pool" runs/s is the workers' own clock: from the first run's first step to the last run's
end, as the run log records them (it leaves out the submitter's lead and the bench's own
polling for the end; the submitter still shares the CPU).

"Steady" runs/s leaves out the ramp (the first runs' dequeue, the submitting): the runs
between the first and the last to finish, over that time.

Per row, load-independent evidence of the queue's own cost: the workers' CPU per run
(``/proc``; their polling while the batch runs included), PostgreSQL transactions per run
in the bench's database (``pg_stat_database``; the bench's own polling included), and from
the logs' timestamps (:func:`timeline`) how long DBOS held a run beyond its steps and how
long a freed slot stayed empty.

Queue overhead per run: one worker of concurrency 1, runs back to back; the wall time per
run less the run's own duration as the run log records it (dequeue, the agent built for
the run, the lease, the workflow's own rows).

    python bench/queue_throughput.py                  # 1, 2, 4 workers; 200 runs each
    python bench/queue_throughput.py --json --runs 24
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tao.workers.worker import SWEEP_S

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

APP = REPO / "tests" / "workers" / "app.py"


def fresh_database(admin_url: str) -> tuple[str, str]:
    import psycopg

    name = f"tao_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}".encode())
    return name, urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))


def drop_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())


def measure(admin_url: str, workers: int, concurrency: int, runs: int, latency: float) -> dict:
    name, url = fresh_database(admin_url)
    home = tempfile.mkdtemp(prefix="tao-bench-queue-")
    env = {
        **os.environ,
        "TAO_DATABASE_URL": url,
        "TAO_HOME": home,
        "PYTHONPATH": str(REPO),
        "APP_LEDGER": str(Path(home) / "ledger.txt"),
        "APP_LATENCY_S": str(latency),
        "APP_TOOL_S": "0",
        "APP_SWEEP_S": str(SWEEP_S),  # what `tao worker` does (the tests sweep faster)
    }
    os.environ.update({k: env[k] for k in ("TAO_DATABASE_URL", "TAO_HOME", "APP_LEDGER")})
    procs = []
    try:
        for _ in range(workers):
            proc = subprocess.Popen(
                [sys.executable, str(APP), "worker", str(concurrency)],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            procs.append(proc)
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().startswith("ready")
        idle_cpu = sum(_cpu_s(proc.pid) for proc in procs)  # start-up: not the runs'
        idle_xacts = _transactions(admin_url, name)
        from tests.workers.app import agent

        from tao.store.factory import open_store

        submitter = agent()
        started = time.perf_counter()
        run_ids = [submitter.submit(f"job b{n}") for n in range(runs)]
        submitted = time.perf_counter() - started
        with open_store() as store:  # one light query a tick: the bench must not load PG
            while len(store.list_runs(limit=runs + 1, status="finished")) < runs:
                if time.perf_counter() - started > 300:
                    raise SystemExit("not all runs finished within 300 s")
                time.sleep(0.1)
            wall = time.perf_counter() - started
            done = [store.get_run(r) for r in run_ids]
            ends = sorted(store.get_summary(r).finished_at or 0.0 for r in run_ids)
            began = min(
                (store.get_summary(r.run_id).finished_at or 0.0)
                - sum(step.duration_s for step in r.steps)
                for r in done
            )
        cpu = sum(_cpu_s(proc.pid) for proc in procs)
        xacts = _transactions(admin_url, name) - idle_xacts
        phases = timeline(url, run_ids)
        own = statistics.mean(sum(step.duration_s for step in r.steps) for r in done)
        return {
            "workers": workers,
            "concurrency": concurrency,
            "runs": runs,
            "latency_s": latency,
            "wall_s": round(wall, 3),
            "runs_per_s": round(runs / wall, 2),
            "pool_s": round(ends[-1] - began, 3),
            "pool_runs_per_s": round(runs / (ends[-1] - began), 2),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "submit_ms_per_run": round(1000 * submitted / runs, 2),
            "run_duration_s": round(own, 3),
            "steady_s_per_run": round((ends[-1] - ends[0]) / (len(ends) - 1), 3),
            "worker_cpu_ms_per_run": round(1000 * (cpu - idle_cpu) / runs, 1),
            "db_transactions_per_run": round(xacts / runs, 1),
            "phases_ms": phases,
        }
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        drop_database(admin_url, name)


def timeline(url: str, run_ids: list[str]) -> dict[str, float]:
    """Where a run's time goes beyond its own steps, median ms a run, from the two logs'
    timestamps (PostgreSQL's and the run log's clocks are this machine's).

    ``submit``: the run's ``queued`` row to its workflow's row (the enqueue); ``held``: the
    time DBOS held the workflow (dequeued to ``SUCCESS``) less the run's own steps (the
    workflow's dispatch and rows, the agent built, the run reopened, its lease, its end
    recorded); ``refill``: a workflow's end to the same worker's next dequeue (the poll
    interval and the dequeue itself: how long a freed slot stays empty)."""
    import psycopg

    with psycopg.connect(url) as conn:
        flows = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT workflow_uuid, created_at, started_at_epoch_ms, updated_at, executor_id"
                " FROM dbos.workflow_status WHERE workflow_uuid = ANY(%s)",
                (run_ids,),
            )
        }
        runs = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT r.id, r.started_at, sum(s.duration_s) FROM runs r"
                " JOIN steps s ON s.run_id = r.id WHERE r.id = ANY(%s) GROUP BY r.id",
                (run_ids,),
            )
        }
    submit, held = [], []
    by_worker: dict[str, list[tuple[float, float]]] = {}
    for run_id in run_ids:
        created, dequeued, closed, executor = flows[run_id]
        queued_at, steps = runs[run_id]
        submit.append(created / 1000 - queued_at)
        held.append((closed - dequeued) / 1000 - steps)
        by_worker.setdefault(executor, []).append((dequeued / 1000, closed / 1000))
    refill = []
    for spans in by_worker.values():
        dequeues = sorted(d for d, _ in spans)
        for _, closed in spans:
            later = [d for d in dequeues if d >= closed]
            if later:
                refill.append(later[0] - closed)
    return {
        name: round(1000 * statistics.median(values), 1)
        for name, values in (("submit", submit), ("held", held), ("refill", refill or [0.0]))
    }


def _transactions(admin_url: str, name: str) -> int:
    """Transactions PostgreSQL has ended in the bench's database so far (its statistics
    lag by up to a second: read after the batch, the figure is a little low)."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute("SELECT pg_stat_clear_snapshot()")
        row = admin.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            (name,),
        ).fetchone()
    return int(row[0]) if row else 0


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process and its waited-for children used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4, help="Runs at once per worker.")
    parser.add_argument("--latency", type=float, default=0.2, help="Seconds per model call.")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-overhead", dest="overhead", action="store_false")
    args = parser.parse_args()
    admin_url = os.environ.get("TAO_TEST_DATABASE_URL", "").strip()
    if not admin_url:
        raise SystemExit('set TAO_TEST_DATABASE_URL: eval "$(bash scripts/start-postgres.sh)"')
    before = os.getloadavg()
    rows = [
        measure(admin_url, int(n), args.concurrency, args.runs, args.latency)
        for n in args.workers.split(",")
    ]
    report: dict[str, object] = {"throughput": rows}
    overhead = measure(admin_url, 1, 1, 10, args.latency) if args.overhead else None
    if overhead is not None:
        # steady state (one run after another on one slot), less the run's own steps
        per_run = overhead["steady_s_per_run"] - overhead["run_duration_s"]
        report["overhead"] = {**overhead, "overhead_s_per_run": round(per_run, 3)}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    base = rows[0]["runs_per_s"]
    steady = 1 / rows[0]["steady_s_per_run"]
    pool = rows[0]["pool_runs_per_s"]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in before)}")
    print(
        "workers conc.  runs  wall s  runs/s speed-up  pool runs/s speed-up"
        "  steady runs/s speed-up  load avg after  cpu ms/run  db tx/run"
        "  held ms  refill ms"
    )
    for row in rows:
        rate = 1 / row["steady_s_per_run"]
        print(
            f"{row['workers']:>7} {row['concurrency']:>5} {row['runs']:>5} {row['wall_s']:>7.2f} "
            f"{row['runs_per_s']:>7.2f} {row['runs_per_s'] / base:>7.2f}x "
            f"{row['pool_runs_per_s']:>12.2f} {row['pool_runs_per_s'] / pool:>7.2f}x "
            f"{rate:>14.2f} {rate / steady:>7.2f}x  {row['load_average'][0]:>14.2f}"
            f"  {row['worker_cpu_ms_per_run']:>10.1f} {row['db_transactions_per_run']:>10.1f}"
            f"  {row['phases_ms']['held']:>7.1f} {row['phases_ms']['refill']:>10.1f}"
        )
    if overhead is None:  # --no-overhead: a concurrency-1 row would be needed to say it
        return
    print(
        f"queue overhead per run: {per_run * 1000:.0f} ms (1 worker, concurrency 1, "
        f"{overhead['steady_s_per_run']:.3f} s a run, of which the run's steps "
        f"{overhead['run_duration_s']:.3f} s); submit: {rows[0]['submit_ms_per_run']} ms a run"
    )


if __name__ == "__main__":
    main()
