"""`batchq run` with job history on (`--keep`) against off, per job, on one backend.

    .venv/bin/python bench/history.py --backend mysql|sqlite|postgresql --jobs 5000 --repeat 6

Each round runs, for each row, history off and on, on freshly emptied tables (batchq_job and
batchq_history; bench/loads.py's reset): no-op jobs loaded server-side (untimed), one `batchq run`
process started (`--batch B` for the batch rows); jobs/s = jobs / wall seconds from its spawn to
its exit. On: `batchq run --keep`, so every job is measured (it always is) and copied into
batchq_history in its claim's transaction, result included (noop returns None); the run then
checks that every job is in the history. The order of off and on alternates from round to
round, so a drift in the machine's load (it is shared) favours neither; the "on / off" column is
the median of each round's own ratio, with its range, so a slow round cancels out. A batch row
drains --batch-jobs jobs (default 10 x --jobs): 5,000 jobs drain in well under a second in
batches, which the process's start-up would swamp. The load average is printed before and after.

The plain cycle's rows are the raw-SQL floor (bench/plain_cycle.py): the same drain written
with the drivers alone, off, and on with `--keep` (each job timed and its CPU read, and the
finished jobs copied into a plain_history table in their DELETE's transaction): what a second
row per job costs when no library is around it.

The target (issue 12): on costs at most 10 % of off's rate, i.e. on / off >= 0.90. `--modes off`
runs the off rows alone: with PYTHONPATH set to an older checkout, the same rows time that
version's `batchq run` (the history-off cycle before and after).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from floors import floor_for
from loads import bulk_load, count_jobs, reset
from machine import server_info
from options import parse, parser
from plain_cycle import PlainCycle
from procs import compile_batchq, run_procs
from report import command_line, emit, table
from settings import BATCHQ, BENCH_DIR, PYTHON, bench_env
from stats import med_range, median, ratio
from vs_plain import batchq_url, plain_load

MODES = ("off", "on")


def empty_history(backend: str) -> None:
    floor = floor_for(backend)
    try:
        # TRUNCATE on the servers: a DELETE would leave its purge (vacuum) to run in the
        # background during the next, timed drain.
        floor.execute(("DELETE FROM" if backend == "sqlite" else "TRUNCATE TABLE") + " batchq_history")
    except Exception:  # an older version has no history table
        pass
    floor.close()


def count_history(backend: str) -> int:
    floor = floor_for(backend)
    (n,) = floor.execute("SELECT COUNT(*) FROM batchq_history")[0]
    floor.close()
    return int(n)


def drain(backend: str, jobs: int, batch: int, keep: bool) -> float:
    reset(backend)
    empty_history(backend)
    bulk_load(backend, jobs)
    cmd = [BATCHQ, "run", "--batch", str(batch)] + (["--keep"] if keep else [])
    wall = run_procs([cmd], bench_env(backend, BATCHQ_URL=batchq_url(backend)))
    if count_jobs(backend):
        raise RuntimeError(f"batchq run left {count_jobs(backend)} jobs")
    if keep and count_history(backend) != jobs:
        raise RuntimeError(f"history holds {count_history(backend)} of {jobs} jobs")
    return jobs / wall


def plain_drain(backend: str, jobs: int, batch: int, keep: bool) -> float:
    plain_load(backend, jobs)
    cmd = [PYTHON, str(BENCH_DIR / "plain_cycle.py"), "--backend", backend, "--batch", str(batch)]
    wall = run_procs([cmd + (["--keep"] if keep else [])], bench_env(backend))
    cycle = PlainCycle(backend)
    left, kept = cycle.count(), cycle.count("plain_history")
    cycle.close()
    if left or kept != (jobs if keep else 0):
        raise RuntimeError(f"plain cycle left {left} jobs and kept {kept} of {jobs}")
    return jobs / wall


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = parser(__doc__, repeat=6, jobs=5000, quick={"jobs": 500, "batch_jobs": 5000, "repeat": 2})
    ap.add_argument("--batches", default="1,100", help="--batch values, one row each (default %(default)s)")
    ap.add_argument("--batch-jobs", type=int, help="jobs per batch row's drain (default 10 x --jobs)")
    ap.add_argument("--modes", default="off,on", help="off,on (default), or off alone")
    args = parse(ap)
    compile_batchq()
    b, modes = args.backend, [m for m in args.modes.split(",") if m in MODES]
    both = modes == list(MODES)
    cases: list[tuple[str, dict[str, Callable[[], float]]]] = []
    for batch in (int(n) for n in args.batches.split(",")):
        name = "`run`" if batch == 1 else f"`run --batch {batch}`"
        jobs = args.jobs if batch == 1 else (args.batch_jobs or 10 * args.jobs)
        for system, drains in (("batchq", drain), ("plain cycle", plain_drain)):
            runs = {
                mode: (lambda d=drains, bt=batch, n=jobs, keep=(mode == "on"): d(b, n, bt, keep))
                for mode in modes
            }
            cases.append((f"{name}, {jobs:,} jobs: {system}", runs))
    rates: dict[str, dict[str, list[float]]] = {name: {m: [] for m in modes} for name, _ in cases}
    loads = [load_average()]
    for rep in range(args.repeat):
        for name, runs in cases:
            order = list(runs.items()) if rep % 2 == 0 else list(reversed(runs.items()))
            for mode, run in order:
                rate = run()
                rates[name][mode].append(rate)
                print(f"# round {rep + 1} {name} {mode}: {rate:,.0f}/s", file=sys.stderr, flush=True)
    loads.append(load_average())
    header = [f"{b}: medians (min–max), jobs/s, 1 process"] + [f"history {m}" for m in modes]
    if both:
        header += ["on / off of the medians", "on / off per round: median (min–max)"]
    rows = []
    for name, by_mode in rates.items():
        row = [name] + [med_range(by_mode[m]) for m in modes]
        if both:
            per_round = [on / off for on, off in zip(by_mode["on"], by_mode["off"])]
            row += [ratio(median(by_mode["on"]), median(by_mode["off"])), med_range(per_round, "{:.2f}×")]
        rows.append(row)
    info = ", ".join(f"{k} {v}" for k, v in server_info(b).items())
    text = table(header, rows)
    rounds = f"{args.repeat} rounds; load average (1, 5, 15 min) before: {loads[0]}, after: {loads[1]}"
    suffix = "" if both else "_" + "_".join(modes)
    body = f"{command_line()}\n\n{text}\n\n{rounds}\n\nServer: {info}"
    emit(f"history on vs off, {b}", body, f"history_{b}{suffix}")


if __name__ == "__main__":
    main()
