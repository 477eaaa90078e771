"""History on vs off in-process, with CPU per job on both sides: where the cost of keeping goes.

    .venv/bin/python bench/history_inprocess.py --backend mysql|postgresql|sqlite --jobs 3000 \
        --batch 1 --repeat 6 [--checkout before=PATH] [--variant LABEL=PATH]

bench/history.py times `batchq run` from spawn to exit; this drains --jobs pre-loaded no-op jobs
with `Worker.run()` alone (no process start-up in the figure), each drain in a fresh child
process (tables emptied and loaded untimed first), and reports per mode: jobs/s, the worker's
own CPU per job (user + system, getrusage) and the server's CPU per job spent on the worker's
connection (PostgreSQL: its backend process; MariaDB: its connection thread in mysqld, found by
running BENCHMARK() on the connection and seeing which thread's CPU moved; SQLite: none, the
server is the worker). /proc counts CPU in clock ticks (10 ms): use a few thousand jobs.
Modes run in a rotating order, reversed every other round; "on / off" is each round's own
ratio against that round's off (median and range). `--checkout LABEL=PATH` adds off and on rows
for another checkout (a `git archive` of an older commit, with `batchq/sql` linked to its
`sql/`), run by the same children with PYTHONPATH set to it: before and after in one
interleaved run; `--variant LABEL=PATH` adds an on row for a variant of this checkout (a
statement changed, say), its ratio against this checkout's off.

The "measured" row is the accounting alone: a worker that measures every success as it does one
it keeps (Meter, figures, result encoded) and then drops the figures, writing no history: the
drain of "off" plus the measuring of "on", without its second row.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable

from floors import floor_for
from loads import bulk_load, reset
from options import parse, parser
from report import command_line, emit, table
from settings import BENCH_DIR, PYTHON, url_for
from stats import med_range

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
MODES = ("off", "measured", "on")


def _ticks(path: str) -> float:
    """CPU seconds (user + system) of a process or thread, from /proc/<path>/stat."""
    with open(f"/proc/{path}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _mysql_thread(conn: object) -> str:
    """The mysqld thread serving ``conn``: the one whose CPU moves while it runs BENCHMARK()."""
    with open("/run/mysqld/mysqld.pid") as pid_file:
        pid = pid_file.read().strip()

    def threads() -> dict[str, float]:
        found = {}
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                found[tid] = _ticks(f"{pid}/task/{tid}")
            except OSError:  # ended meanwhile
                pass
        return found

    before = threads()
    with conn.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute("SELECT BENCHMARK(3000000, MD5('batchq'))")
    after = threads()
    return f"{pid}/task/{max(after, key=lambda tid: after[tid] - before.get(tid, 0.0))}"


def server_clock(backend: str, queue: object) -> Callable[[], float]:
    """A reader of the server-side CPU seconds spent for the worker's connection (0 on SQLite)."""
    conn = queue.backend.conn  # type: ignore[attr-defined]
    if backend == "postgresql":
        path = str(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
    elif backend == "mysql":
        path = _mysql_thread(conn)
    else:
        return lambda: 0.0
    return lambda: _ticks(path)


def worker_classes() -> tuple[type, type]:
    """(RunOptions, Worker) of the checkout this child runs (batchq.worker before the package
    was laid out in parts)."""
    try:
        from batchq.runtime.worker import RunOptions, Worker
    except ImportError:
        from batchq.worker import RunOptions, Worker  # type: ignore[no-redef]
    return RunOptions, Worker


def measuring_worker() -> type:
    """A Worker that measures every success as one it keeps, then drops the figures."""
    _, worker = worker_classes()
    try:
        from batchq.runtime.claims import KeptJobs
    except ImportError:  # a checkout from before: the worker kept its kept jobs itself
        return measuring_worker_before(worker)

    class MeasuredNotKept(KeptJobs):
        def keeps(self, job: object) -> bool:
            return True

        def of(self, done: list) -> None:
            self.kept.clear()
            return None

        def delete(self, done: list) -> int:
            self.kept.clear()
            return super().delete(done)

    class MeasuringWorker(worker):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            self._kept.__class__ = MeasuredNotKept  # the one the claims hold too

    return MeasuringWorker


def measuring_worker_before(worker: type) -> type:
    class MeasuringWorker(worker):  # type: ignore[misc, valid-type]
        def _keeps(self, job: object) -> bool:
            return True

        def _kept_of(self, done: list) -> None:
            self._kept.clear()
            return None

        def _delete_done(self, done: list) -> int:
            self._kept.clear()
            return super()._delete_done(done)

    return MeasuringWorker


def child(backend: str, jobs: int, batch: int, mode: str) -> None:
    """One drain, in this process: prints {rate, client, server} as JSON."""
    from batchq import Queue

    RunOptions, Worker = worker_classes()

    reset(backend)
    floor = floor_for(backend)
    floor.execute("DELETE FROM batchq_history")
    floor.close()
    bulk_load(backend, jobs)
    queue = Queue(url_for(backend), task_modules="noop_jobs")
    keep = mode == "on"
    worker_class = measuring_worker() if mode == "measured" else Worker
    worker = worker_class(queue, RunOptions(keep=keep, batch_size=batch))
    server = server_clock(backend, queue)
    s0, r0, t0 = server(), resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    summary = worker.run()
    wall, r1, s1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF), server()
    queue.close()
    if summary.succeeded != jobs:
        raise SystemExit(f"drained {summary.succeeded} of {jobs} jobs")
    floor = floor_for(backend)
    (kept,) = floor.execute("SELECT COUNT(*) FROM batchq_history")[0]
    floor.close()
    if int(kept) != (jobs if keep else 0):
        raise SystemExit(f"history holds {kept} of {jobs} jobs ({mode})")
    client = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    print(json.dumps({"rate": jobs / wall, "client": client / jobs * 1e6, "server": (s1 - s0) / jobs * 1e6}))


def spawn(backend: str, jobs: int, batch: int, mode: str, tree: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree
    cmd = [PYTHON, __file__, "--backend", backend, "--child", mode]
    cmd += ["--jobs", str(jobs), "--batch", str(batch)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=BENCH_DIR)
    if out.returncode:
        raise SystemExit(out.stderr or out.stdout)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = parser(__doc__, repeat=6, jobs=3000, batch=1, quick={"jobs": 300, "repeat": 2})
    ap.add_argument(
        "--checkout",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="another checkout run beside this one, off and on (e.g. before=/tmp/before)",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="a variant of this checkout, on only, its ratio against this one's off",
    )
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)  # one drain, in a child
    args = parse(ap)
    if args.child:
        child(args.backend, args.jobs, args.batch, args.child)
        return
    # (row name, child mode, checkout or None for this one, the row whose rate is its "off")
    modes: list[tuple[str, str, str | None, str]] = [(mode, mode, None, "off") for mode in MODES]
    for label, path in (item.split("=", 1) for item in args.checkout):
        modes += [
            (f"{label}: off", "off", path, f"{label}: off"),
            (f"{label}: on", "on", path, f"{label}: off"),
        ]
    for label, path in (item.split("=", 1) for item in args.variant):
        modes.append((f"{label}: on", "on", path, "off"))
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _, _, _ in modes}
    loads = [os.getloadavg()]
    for rnd in range(args.repeat):
        shift = rnd % len(modes)
        order = modes[shift:] + modes[:shift]
        for name, mode, tree, _ in order if rnd % 2 == 0 else reversed(order):
            results[name].append(spawn(args.backend, args.jobs, args.batch, mode, tree))
        shown = ", ".join(f"{name} {runs[-1]['rate']:,.0f}/s" for name, runs in results.items())
        print(f"# round {rnd + 1}: {shown}", file=sys.stderr, flush=True)
    loads.append(os.getloadavg())
    rows = []
    for name, mode, _, off in modes:
        runs = results[name]
        offs = results[off]
        ratios = [run["rate"] / off["rate"] for run, off in zip(runs, offs)]
        rows.append(
            [
                name,
                med_range([r["rate"] for r in runs]),
                med_range(ratios, "{:.2f}×") if mode != "off" else "",
                med_range([r["client"] for r in runs], "{:.1f}"),
                med_range([r["server"] for r in runs], "{:.0f}"),
            ]
        )
    header = [
        f"{args.backend}, `--batch {args.batch}`, {args.jobs:,} jobs, {args.repeat} rounds",
        "jobs/s",
        "on / off per round",
        "worker CPU µs/job",
        "server CPU µs/job",
    ]
    shown_loads = " -> ".join(" ".join(f"{x:.2f}" for x in load) for load in loads)
    text = f"{command_line()}\n\n{table(header, rows)}\n\nMedians (min–max). Load average: {shown_loads}"
    emit(
        f"history on vs off in-process, {args.backend}",
        text,
        f"history_inprocess_{args.backend}_{args.batch}",
    )


if __name__ == "__main__":
    main()
