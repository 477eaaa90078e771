"""batchq against the plain cycle of seed 004 (bench/plain_cycle.py), interleaved in one run.

    .venv/bin/python bench/vs_plain.py --backend mysql|sqlite|postgresql --jobs 20000 --repeat 3

Each repetition runs, for each row, the plain cycle and then batchq on freshly recreated
tables (plain_job dropped and created; batchq_job emptied, TRUNCATE on the servers):
  run, K processes      --jobs no-op jobs loaded (untimed), K workers started at once; jobs/s =
                        jobs / wall seconds from the first spawn to the last exit. Plain: K x
                        `python bench/plain_cycle.py`; batchq: K x `batchq run`.
  run --batch 100       the same with 100 jobs claimed per transaction (plain: LIMIT 100, one
                        UPDATE ... IN and one DELETE ... IN per batch; batchq: `run --batch 100`).
  enqueue()             --enqueue single-row INSERTs from one process, in autocommit; batchq:
                        Queue(url).enqueue("noop_jobs:noop", {"i": i}).
  enqueue_many() of 100 --jobs rows in INSERTs of 100 rows; batchq: Queue(url).enqueue_many.
--enqueue-only runs only the last two rows.
Both sides connect once before the timed part of the in-process rows. MySQL runs without TLS
on both sides (`sslmode=disable`), so connection set-up is not what is compared.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from batchq import Queue

from loads import bulk_load, count_jobs, reset
from machine import server_info
from options import parse, parser
from plain_cycle import PlainCycle
from procs import compile_batchq, run_procs
from report import command_line, emit, table
from settings import BATCHQ, BENCH_DIR, PYTHON, TASK, bench_env, url_for
from stats import med_range, median, ratio


def batchq_url(backend: str) -> str:
    url = url_for(backend)
    if backend == "mysql" and "sslmode=" not in url:
        url += ("&" if "?" in url else "?") + "sslmode=disable"
    return url


def plain_load(backend: str, jobs: int) -> None:
    """The plain cycle's tables created afresh, with ``jobs`` no-op jobs in them (untimed)."""
    cycle = PlainCycle(backend)
    cycle.recreate()
    for start in range(0, jobs, 1000):
        cycle.enqueue_many([{"i": i} for i in range(start, min(start + 1000, jobs))])
    cycle.close()


def plain_drain(backend: str, jobs: int, procs: int, batch: int) -> float:
    plain_load(backend, jobs)
    cmd = [PYTHON, str(BENCH_DIR / "plain_cycle.py"), "--backend", backend, "--batch", str(batch)]
    wall = run_procs([cmd] * procs, bench_env(backend))
    _check_drained("plain cycle", PlainCycle(backend).count())
    return jobs / wall


def batchq_drain(backend: str, jobs: int, procs: int, batch: int) -> float:
    reset(backend)
    bulk_load(backend, jobs)
    cmd = [BATCHQ, "run", "--batch", str(batch)]
    wall = run_procs([cmd] * procs, bench_env(backend, BATCHQ_URL=batchq_url(backend)))
    _check_drained("batchq run", count_jobs(backend))
    return jobs / wall


def _check_drained(name: str, left: int) -> None:
    if left:
        raise RuntimeError(f"{name} left {left} jobs")


def timed(calls: int, call: Callable[[int], object]) -> float:
    """Calls per second of ``call(0..calls-1)``, after one untimed warm-up call."""
    call(-1)
    t0 = time.perf_counter()
    for i in range(calls):
        call(i)
    return calls / (time.perf_counter() - t0)


def plain_enqueue(backend: str, n: int, per_call: int) -> float:
    cycle = PlainCycle(backend)
    cycle.recreate()
    if per_call == 1:
        rate = timed(n, lambda i: cycle.enqueue({"i": i}))
    else:
        rate = per_call * timed(n // per_call, lambda b: cycle.enqueue_many(_payloads(b, per_call)))
    cycle.close()
    return rate


def batchq_enqueue(backend: str, n: int, per_call: int) -> float:
    reset(backend)
    q = Queue(batchq_url(backend), task_modules="noop_jobs")
    if per_call == 1:
        rate = timed(n, lambda i: q.enqueue(TASK, {"i": i}))
    else:
        rate = per_call * timed(n // per_call, lambda b: q.enqueue_many(TASK, _payloads(b, per_call)))
    q.close()
    return rate


def _payloads(batch: int, size: int) -> list[dict[str, int]]:
    return [{"i": batch * size + k} for k in range(size)]


def main() -> None:
    ap = parser(
        __doc__,
        jobs=20000,
        jobs_help="jobs per drain and per enqueue_many row",
        procs="1,4",
        quick={"jobs": 2000, "enqueue": 300, "repeat": 1},
    )
    ap.add_argument("--enqueue", type=int, default=2000, help="single-row enqueues per repetition")
    ap.add_argument("--enqueue-only", action="store_true", help="only the enqueue() and enqueue_many() rows")
    args = parse(ap)
    compile_batchq()
    sys.path.insert(0, str(BENCH_DIR))
    b = args.backend
    cases: list[tuple[str, Callable[[], float], Callable[[], float]]] = []
    for procs in [] if args.enqueue_only else args.procs:
        cases.append(
            (
                f"`run`, {procs} process{'es' if procs > 1 else ''}",
                lambda p=procs: plain_drain(b, args.jobs, p, 1),
                lambda p=procs: batchq_drain(b, args.jobs, p, 1),
            )
        )
    for procs in [] if args.enqueue_only else args.procs:
        cases.append(
            (
                f"`run --batch 100`, {procs} process{'es' if procs > 1 else ''}",
                lambda p=procs: plain_drain(b, args.jobs, p, 100),
                lambda p=procs: batchq_drain(b, args.jobs, p, 100),
            )
        )
    cases.append(
        ("`enqueue()`", lambda: plain_enqueue(b, args.enqueue, 1), lambda: batchq_enqueue(b, args.enqueue, 1))
    )
    cases.append(
        (
            "`enqueue_many()` of 100",
            lambda: plain_enqueue(b, args.jobs, 100),
            lambda: batchq_enqueue(b, args.jobs, 100),
        )
    )
    rates: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name, _, _ in cases}
    for rep in range(args.repeat):
        for name, plain, batchq in cases:
            plain_rates, batchq_rates = rates[name]
            plain_rates.append(plain())
            batchq_rates.append(batchq())
            print(
                f"# rep {rep + 1} {name}: plain {plain_rates[-1]:,.0f}/s, batchq {batchq_rates[-1]:,.0f}/s",
                file=sys.stderr,
                flush=True,
            )
    rows = [
        [name, med_range(p), med_range(bq), ratio(median(bq), median(p))] for name, (p, bq) in rates.items()
    ]
    info = ", ".join(f"{k} {v}" for k, v in server_info(b).items())
    text = table([f"{b}: medians (min–max), jobs/s", "plain cycle", "batchq", "ratio"], rows)
    emit(f"batchq vs the plain cycle, {b}", f"{command_line()}\n\n{text}\n\nServer: {info}", f"vs_plain_{b}")


if __name__ == "__main__":
    main()
