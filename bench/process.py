"""Drain N pre-loaded no-op jobs with 1, 2, 4 worker processes: floor vs `batchq run` vs peers.

    .venv/bin/python bench/process.py --backend mysql|sqlite|postgresql --jobs 20000 --procs 1,2,4 --repeat 3

Each repetition, for each process count, each system gets a fresh table loaded with
--jobs due jobs (loaded server-side, not timed), then K worker processes are started at
once; jobs/s = jobs / wall seconds from the first spawn to the moment the work is done:
  floor  - K x `python bench/floor_worker.py --mode single` (raw driver, batchq's statements:
           claim in one transaction, DELETE in autocommit, two commits per job), until every
           process has exited on an empty queue;
  fused  - the same with `--mode fused`: batchq run's own cycle, the DELETE of a finished job
           in the transaction that claims the next (one commit per job);
  batchq - K x `batchq run` (the installed console script), until every process has exited;
  huey   - one `huey_consumer huey_app.huey -w K -k process -q`, until its task table is
           empty (polled every 20 ms; the consumer is then stopped, not timed); on
           PostgreSQL SqlHuey through peewee on psycopg 3.
PostgreSQL only, the peers of bench/peers.py (each in its own database; what they do per
job is written there), timed like huey from the spawn until their queue holds no
unfinished job (polled every 20 ms; the workers then exit by themselves, untimed):
  procrastinate - K x `procrastinate ... worker --one-shot`, each at its default
           concurrency 1 (one job at a time per process);
  pgqueuer-1    - K x `pgq run --mode drain --batch-size 1`: one job per dequeue and per
           completion statement, comparable with batchq's one row per transaction;
  pgqueuer-10   - the same at pgqueuer's default --batch-size 10 (10 jobs per dequeue and
           per completion statement).
--no-peers skips huey and these.
Process start-up (interpreter, imports, connect) is inside the wall time for every system.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time

from loads import bulk_load, count_jobs, reset
from machine import server_info
from options import parse, parser
from peers import DRAIN_PEERS
from procs import compile_batchq, run_procs
from report import command_line, emit, table
from settings import BATCHQ, BENCH_DIR, BIN_DIR, PYTHON, REPO_DIR, bench_env
from stats import med_range, median, ratio

HUEY_KINDS = {"mysql": ["mysql-sql"], "sqlite": ["sqlite", "sqlite-sql"], "postgresql": ["postgresql-sql"]}
PEER_KINDS = {"postgresql": list(DRAIN_PEERS)}
HUEY_LABEL = {
    "mysql-sql": "huey SqlHuey (peewee, MariaDB)",
    "postgresql-sql": "huey SqlHuey (peewee, PostgreSQL)",
    "sqlite-sql": "huey SqlHuey (peewee, SQLite WAL)",
    "sqlite": "huey SqliteHuey (WAL)",
}


LABELS = {
    "floor": "raw-SQL floor: claim txn + DELETE (2 commits/job)",
    "fused": "raw-SQL floor: DELETE + next claim in one txn (1 commit/job)",
    "batchq": "`batchq run` (1 commit/job)",
}


def drain_floor(backend: str, jobs: int, procs: int, mode: str = "single", batch: int = 100) -> float:
    reset(backend)
    bulk_load(backend, jobs)
    cmd = [
        PYTHON,
        str(BENCH_DIR / "floor_worker.py"),
        "--backend",
        backend,
        "--mode",
        mode,
        "--batch",
        str(batch),
    ]
    wall = run_procs([cmd] * procs, bench_env(backend))
    left = count_jobs(backend)
    if left:
        raise RuntimeError(f"floor left {left} jobs")
    return wall


def drain_batchq(backend: str, jobs: int, procs: int, extra: list[str] | None = None) -> float:
    reset(backend)
    bulk_load(backend, jobs)
    cmd = [BATCHQ, "run", *(extra or [])]
    wall = run_procs([cmd] * procs, bench_env(backend))
    left = count_jobs(backend)
    if left:
        raise RuntimeError(f"batchq run left {left} jobs")
    return wall


def drain_huey(kind: str, jobs: int, procs: int, timeout: float = 600) -> float:
    env = bench_env("sqlite", BENCH_HUEY=kind)
    sys.path.insert(0, str(BENCH_DIR))
    os.environ["BENCH_HUEY"] = kind
    import importlib

    import huey_app

    app = importlib.reload(huey_app)
    app.flush()
    app.preload(jobs)
    app.huey.storage.close()
    if app.pending() != jobs:
        raise RuntimeError("huey preload failed")
    cmd = [str(BIN_DIR / "huey_consumer"), "huey_app.huey", "-w", str(procs), "-k", "process", "-q"]
    t0 = time.perf_counter()
    consumer = subprocess.Popen(cmd, env=env, cwd=REPO_DIR, stdout=subprocess.DEVNULL)
    try:
        while app.pending() > 0:
            if consumer.poll() is not None:
                raise RuntimeError(f"huey_consumer exited {consumer.returncode}")
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError("huey drain timed out")
            time.sleep(0.02)
        wall = time.perf_counter() - t0
    finally:
        consumer.send_signal(signal.SIGINT)  # graceful: workers finish the task at hand
        try:
            consumer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            consumer.kill()
            consumer.wait()
    app.huey.storage.close()
    return wall


def drain(name: str, backend: str, jobs: int, procs: int) -> float:
    if name == "floor":
        return drain_floor(backend, jobs, procs, "single")
    if name == "fused":
        return drain_floor(backend, jobs, procs, "fused")
    if name == "batchq":
        return drain_batchq(backend, jobs, procs)
    if name in DRAIN_PEERS:
        return DRAIN_PEERS[name]().drain(jobs, procs)
    return drain_huey(name, jobs, procs)


def label(name: str) -> str:
    if name in DRAIN_PEERS:
        return DRAIN_PEERS[name]().label
    return LABELS.get(name) or HUEY_LABEL.get(name, name)


def main() -> None:
    args = parse(parser(__doc__, jobs=20000, procs="1,2,4", peers=True, quick={"jobs": 2000, "repeat": 1}))
    procs_list = args.procs
    compile_batchq()
    kinds = [] if args.no_peers else HUEY_KINDS.get(args.backend, []) + PEER_KINDS.get(args.backend, [])
    walls: dict[tuple[str, int], list[float]] = {}
    cpus: dict[tuple[str, int], list[float]] = {}
    for rep in range(args.repeat):
        for procs in procs_list:
            for name in ["floor", "fused", "batchq", *kinds]:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                wall = drain(name, args.backend, args.jobs, procs)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                cpus.setdefault((name, procs), []).append(cpu / args.jobs * 1e3)
                walls.setdefault((name, procs), []).append(wall)
                print(
                    f"# rep {rep + 1} procs {procs} {name}: {wall:.2f}s = {args.jobs / wall:,.0f} jobs/s",
                    file=sys.stderr,
                    flush=True,
                )

    rows = []
    for procs in procs_list:
        floor_rate = median([args.jobs / w for w in walls[("floor", procs)]])
        fused_rate = median([args.jobs / w for w in walls[("fused", procs)]])
        bq_rate = median([args.jobs / w for w in walls[("batchq", procs)]])
        for name in ["floor", "fused", "batchq", *kinds]:
            rates = [args.jobs / w for w in walls[(name, procs)]]
            vs_batchq = "" if name == "batchq" else ratio(bq_rate, median(rates))
            rows.append(
                [
                    procs,
                    label(name),
                    med_range(rates),
                    ratio(median(rates), floor_rate),
                    ratio(median(rates), fused_rate),
                    vs_batchq,
                    f"{median(cpus[(name, procs)]):.3f}",
                ]
            )
    info = server_info(args.backend)
    settings = ", ".join(f"{k}={v}" for k, v in info.items())
    text = table(
        [
            "procs",
            "system",
            "jobs/s median (min–max)",
            "of floor",
            "of fused floor",
            "batchq ÷ this",
            "worker CPU ms/job",
        ],
        rows,
    )
    peers_note = ""
    if any(k in DRAIN_PEERS for k in kinds):
        peers_note = (
            "\nPeers (bench/peers.py, each in its own database, default settings otherwise): procrastinate "
            "with 1 worker process per proc at concurrency 1; pgqueuer with 1 `pgq run` per proc, at "
            "--batch-size 1 and at its default 10 (the only rows that take more than one job per "
            "transaction); both timed until their queue holds no unfinished job."
        )
    text += (
        f"\n\n{args.jobs:,} no-op jobs, {args.repeat} repetitions, one-row-per-transaction claims "
        f"unless the row says otherwise; {settings}.\nworker CPU ms/job = user+sys CPU of the worker "
        "processes (start-up included) / jobs (for huey: the consumer and its worker processes, "
        f"shutdown included).{peers_note}\nCommand: {command_line()}"
    )
    emit(f"process: drain {args.jobs:,} jobs, {args.backend}", text, f"process-{args.backend}")


if __name__ == "__main__":
    main()
