"""PyMySQL against mysqlclient (MySQLdb: rows read and decoded in C) on batchq's own MariaDB
statements, side by side: what batchq's worker and producer connections would save on mysqlclient.

    .venv/bin/python bench/mysql_drivers.py --backend mysql --jobs 20000 --enqueue 3000 --repeat 5

Each repetition runs every figure on both drivers (the drivers' order alternating by
repetition), on batchq's schema (Queue(url).init_db(), batchq_job emptied before each run):
  drain, batch of 100   --jobs no-op jobs bulk-loaded server-side (untimed), then drained
                        in-process exactly as MySQLJobStore.claim runs `batchq run --batch 100`:
                        per batch, jobs_claim as one multi-statement query (SET TRANSACTION;
                        START TRANSACTION; the DELETE of the previous batch, fenced by its token;
                        SELECT ... LIMIT 100 FOR UPDATE SKIP LOCKED), then jobs_claim_mark
                        (UPDATE ... IN; COMMIT); the last claim finds nothing, and commits the
                        last batch's DELETE. Each statement on a fresh tuple cursor, every result
                        set read as the backend reads it (batchq.backends.mysql._statement_results).
                        Job objects, task calls and the worker's bookkeeping are left out: they
                        cost the same on either driver.
  enqueue, one row      --enqueue single-row INSERTs of batchq's `enqueue` statement, each in
                        autocommit on a fresh cursor; the row is a plain job's as Queue.enqueue
                        fills it (JobBuilder.template) with the payload {"i": n}.
  enqueue, 100 rows     --jobs rows in INSERTs of 100 rows (the enqueue VALUES row repeated, as
                        bench/floors.py builds it), each in autocommit.
Both drivers get batchq's session (SESSION_QUERIES: autocommit, UTC, strict, READ COMMITTED,
FOUND_ROWS, MULTI_STATEMENTS, utf8mb4) and the same parameters, escaped by the driver itself
(the claim statements come out byte-identical on both: checked before timing). Figures: client
CPU µs per job (time.process_time: this process, user + system), the server's CPU µs per job on
the connection's own mysqld thread (found as bench/history_inprocess.py finds it; /proc counts
10 ms ticks, and background threads such as purge and the log writer are not in it), and wall
jobs/s. The enqueued rows are built before the timed part.

In context (skip with --no-context), in the same repetitions and with the same figures: the
plain cycle's batched drain (bench/plain_cycle.py's `--batch 100`, in-process: vs_plain.py's
`run --batch 100` row) and batchq's own `Worker.run()` with batch_size 100 on PyMySQL (as
bench/cpu_per_job.py --batch 100 runs it); then what mysqlclient's client CPU saving per job
would be worth against the worker's wall time per job and its gap to the plain cycle.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import pymysql
from pymysql.constants import CLIENT

from batchq import Queue
from batchq.backends.mysql import SESSION_QUERIES, _statement_results
from batchq.backends.mysql_drivers import MySQLdb, PyMySQL
from batchq.backends.sqlfiles import queries
from batchq.core.config import parse_url
from batchq.runtime.worker import RunOptions, Worker

from floors import Floor, multi_row_insert, payload_bytes
from history_inprocess import _mysql_thread, _ticks
from loads import bulk_load, count_jobs, reset
from options import parse, parser
from plain_cycle import PlainCycle
from report import command_line, emit, table
from settings import TASK, url_for
from stats import med_range, median, ratio
from vs_plain import batchq_url, plain_load

DRIVERS = ("PyMySQL", "mysqlclient")
BATCH = 100
WORKER = "bench:mysql_drivers"
Q = queries("mysql")
FLAGS = CLIENT.FOUND_ROWS | CLIENT.MULTI_STATEMENTS  # batchq's: exact rowcounts, one-trip claims


def connect(driver: str, url: str) -> Any:
    """A connection with batchq's own options and session (MySQLBackend._connect), no TLS."""
    u = parse_url(url)
    common = {
        "host": u.host,
        "port": u.port or 3306,
        "user": u.user or "root",
        "password": u.password or "",
        "database": u.database,
        "charset": "utf8mb4",
        "autocommit": True,
        "client_flag": FLAGS,
    }
    if driver == "PyMySQL":
        conn = pymysql.connect(**common, ssl_disabled=True)
    else:
        import MySQLdb as mysqldb  # the optional extra batchq[mysqlclient]

        conn = mysqldb.connect(**common)  # libmariadb: TLS only when asked for
    with conn.cursor() as cur:
        for name in SESSION_QUERIES:
            cur.execute(Q[name])
    return conn


def run(conn: Any, sql: str, params: dict[str, Any]) -> list[tuple[int, list[tuple[Any, ...]]]]:
    """One named statement as the backend runs it: a fresh cursor, every result set read."""
    cur = conn.cursor()  # both drivers' default cursor: buffered tuples, batchq's tuple_cursor
    try:
        cur.execute(sql, params)
        return _statement_results(cur)
    finally:
        cur.close()


def claim_params(done_token: str | None, done_ids: list[Any]) -> dict[str, Any]:
    """jobs_claim's parameters as MySQLJobStore.claim builds them (IN (NULL) when nothing is done)."""
    return {
        "queue": "default",
        "limit": BATCH,
        "partition": None,
        "done_token": done_token,
        "done_ids": done_ids,
    }


def drain(conn: Any) -> int:
    """`batchq run --batch 100`'s statements until the queue is empty; the jobs claimed."""
    done_token, done_ids, count = None, [None], 0
    while True:
        token = os.urandom(16).hex()
        *_, (_, rows) = run(conn, Q["jobs_claim"], claim_params(done_token, done_ids))
        if not rows:
            conn.commit()  # _commit_without_jobs: the last batch's DELETE
            return count
        ids = [row[0] for row in rows]
        run(conn, Q["jobs_claim_mark"], {"ids": ids, "worker": WORKER, "token": token})
        done_token, done_ids, count = token, ids, count + len(ids)


def enqueue_template(url: str) -> dict[str, Any]:
    """A plain job's row but its payload, as Queue.enqueue(TASK, payload) fills it."""
    queue = Queue(url, task_modules="noop_jobs")
    try:
        return queue.builder.template(queue.builder.spec(TASK))
    finally:
        queue.close()


def enqueue_one(conn: Any, rows: Sequence[dict[str, Any]]) -> int:
    sql = Q["enqueue"]
    for row in rows:
        cur = conn.cursor()
        cur.execute(sql, row)
        cur.close()
    return len(rows)


def enqueue_multi(conn: Any, rows: Sequence[dict[str, Any]]) -> int:
    sql = multi_row_insert(Q["enqueue"], BATCH, "pyformat")
    chunks = [Floor.multi_params(rows[i : i + BATCH]) for i in range(0, len(rows), BATCH)]
    for params in chunks:  # built before the loop: only the driver's part is in it
        cur = conn.cursor()
        cur.execute(sql, params)
        cur.close()
    return len(rows)


Figures = tuple[float, float, float]  # client CPU µs/job, server thread CPU µs/job, jobs/s


def timed(work: Callable[[], int], server: str) -> tuple[int, float, float, float]:
    """(jobs, client CPU seconds, server thread CPU seconds, wall seconds) of one call."""
    s0, c0, t0 = _ticks(server), time.process_time(), time.perf_counter()
    jobs = work()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return jobs, cpu, _ticks(server) - s0, wall


def one_run(driver: str, url: str, figure: str, jobs: int, enqueue: int) -> Figures:
    """The figures of one figure on one driver; the table set up untimed."""
    reset("mysql")
    if figure == "drain":
        bulk_load("mysql", jobs)
    conn = connect(driver, url)
    server = _mysql_thread(conn)  # the connection's mysqld thread (BENCHMARK(), untimed)
    try:
        if figure == "drain":
            done, cpu, served, wall = timed(lambda: drain(conn), server)
            expected, left = jobs, count_jobs("mysql")
        else:
            template = enqueue_template(url)
            n = enqueue if figure == "one" else jobs
            rows = [{**template, "payload": payload_bytes(i)} for i in range(n)]
            send = enqueue_one if figure == "one" else enqueue_multi
            done, cpu, served, wall = timed(lambda: send(conn, rows), server)
            expected, left = len(rows), len(rows) - count_jobs("mysql")
    finally:
        conn.close()
    if done != expected or left:
        raise SystemExit(f"{driver} {figure}: {done} of {expected} jobs, {left} left over")
    return cpu / done * 1e6, served / done * 1e6, done / wall


CONTEXT = {
    "plain": "plain cycle, batch of 100 (bench/plain_cycle.py: PyMySQL, its own table)",
    "worker": "batchq `Worker.run()`, batch of 100 (PyMySQL)",
}


def context_run(which: str, url: str, jobs: int) -> Figures:
    """A whole drain of ``jobs`` beside the drivers' claim loops, with the same figures: the plain
    cycle's (vs_plain.py's `run --batch 100` in-process) or batchq's own worker's."""
    if which == "plain":
        plain_load("mysql", jobs)
        cycle = PlainCycle("mysql")
        conn, work, close = cycle.conn, lambda: cycle.drain(BATCH), cycle.close
    else:
        reset("mysql")
        bulk_load("mysql", jobs)
        queue = Queue(batchq_url("mysql"), task_modules="noop_jobs")
        worker = Worker(queue, RunOptions(batch_size=BATCH))
        conn, close = queue.backend.conn, queue.close
        work = lambda: worker.run().succeeded  # noqa: E731
    server = _mysql_thread(conn)
    try:
        done, cpu, served, wall = timed(work, server)
    finally:
        close()
    left = plain_left() if which == "plain" else count_jobs("mysql")
    if done != jobs or left:
        raise SystemExit(f"{which}: {done} of {jobs} jobs, {left} left over")
    return cpu / done * 1e6, served / done * 1e6, done / wall


def plain_left() -> int:
    cycle = PlainCycle("mysql")
    try:
        return cycle.count()
    finally:
        cycle.close()


def check_same_statements(url: str) -> None:
    """The claim's statements as each driver would send them: the same bytes, or no comparison."""
    conns = {driver: connect(driver, url) for driver in DRIVERS}
    build = {"PyMySQL": PyMySQL.statement, "mysqlclient": MySQLdb.statement}
    samples = [
        (Q["jobs_claim"], claim_params(None, [None])),
        (Q["jobs_claim"], claim_params("ab" * 16, list(range(1, BATCH + 1)))),
        (Q["jobs_claim_mark"], {"ids": list(range(1, BATCH + 1)), "worker": WORKER, "token": "cd" * 16}),
    ]
    try:
        for sql, params in samples:
            sent = set()
            for driver, conn in conns.items():
                with conn.cursor() as cur:
                    sent.add(build[driver](cur, sql, params))
            if len(sent) != 1:
                raise SystemExit(f"the drivers would send different claim statements: {sent}")
    finally:
        for conn in conns.values():
            conn.close()


FIGURES = {
    "drain": "drain, batch of 100 (jobs_claim + jobs_claim_mark)",
    "one": "enqueue, one row per INSERT",
    "multi": "enqueue, 100 rows per INSERT",
}


MEASURES = (
    ("client CPU µs/job", "{:.1f}"),
    ("server thread CPU µs/job", "{:.0f}"),
    ("jobs/s (wall)", "{:,.0f}"),
)


def summary(results: dict[tuple[str, str], list[Figures]]) -> str:
    rows = []
    for figure, label in FIGURES.items():
        base = results[("PyMySQL", figure)]
        for driver in DRIVERS:
            runs = results[(driver, figure)]
            for i, (measure, fmt) in enumerate(MEASURES):
                values = [r[i] for r in runs]
                vs = "" if driver == "PyMySQL" else ratio(median(values), median([r[i] for r in base]))
                rows.append([driver, f"{label}: {measure}", med_range(values, fmt), vs])
    return table(["driver", "figure", "median (min–max)", "vs PyMySQL"], rows)


def context_table(results: dict[tuple[str, str], list[Figures]]) -> str:
    """The drain's figures beside the plain cycle and batchq's worker, per job; then what
    mysqlclient's client CPU saving is worth against the worker's wall time and the gap."""
    systems = {
        ("plain", "drain"): CONTEXT["plain"],
        ("PyMySQL", "drain"): "batchq's claim statements on PyMySQL",
        ("mysqlclient", "drain"): "batchq's claim statements on mysqlclient",
        ("worker", "drain"): CONTEXT["worker"],
    }
    rows = []
    for key, label in systems.items():
        runs = results[key]
        figures = [[r[0] for r in runs], [r[1] for r in runs], [1e6 / r[2] for r in runs]]
        rows.append([label, *(med_range(f, "{:.1f}") for f in figures), med_range([r[2] for r in runs])])
    header = ["drain of no-op jobs", "client CPU µs/job", "server thread CPU µs/job", "wall µs/job", "jobs/s"]
    saved = median([r[0] for r in results[("PyMySQL", "drain")]]) - median(
        [r[0] for r in results[("mysqlclient", "drain")]]
    )
    worker_wall = median([1e6 / r[2] for r in results[("worker", "drain")]])
    plain_wall = median([1e6 / r[2] for r in results[("plain", "drain")]])
    return table(header, rows) + (
        f"\n\nmysqlclient saves {saved:.1f} µs of client CPU per job in the claim loop: "
        f"{saved / worker_wall:.0%} of the worker's {worker_wall:.0f} µs/job wall, "
        f"{saved / (worker_wall - plain_wall):.0%} of its gap to the plain cycle's {plain_wall:.0f} "
        f"µs/job (worker at {plain_wall / worker_wall:.2f}× the plain cycle; "
        f"{plain_wall / (worker_wall - saved):.2f}× were the saving all wall time)."
    )


def main() -> None:
    quick = {"jobs": 2000, "enqueue": 300, "repeat": 1}
    ap = parser(__doc__, jobs=20000, jobs_help="jobs per drain and per 100-row enqueue run", quick=quick)
    ap.add_argument(
        "--enqueue", type=int, default=3000, help="single-row INSERTs per run (default %(default)s)"
    )
    ap.add_argument(
        "--no-context", action="store_true", help="skip the plain cycle's and Worker.run()'s drains"
    )
    args = parse(ap)
    if args.backend != "mysql":
        raise SystemExit("mysql_drivers.py compares MySQL drivers: --backend mysql")
    url = url_for("mysql")
    check_same_statements(url)
    load_before = os.getloadavg()[0]
    results: dict[tuple[str, str], list[Figures]] = {
        (driver, figure): [] for driver in DRIVERS for figure in FIGURES
    }
    contexts = () if args.no_context else tuple(CONTEXT)
    results.update({(which, "drain"): [] for which in contexts})
    for rep in range(args.repeat):
        order = DRIVERS if rep % 2 == 0 else DRIVERS[::-1]
        for figure in FIGURES:
            for driver in order:
                results[(driver, figure)].append(one_run(driver, url, figure, args.jobs, args.enqueue))
        for which in contexts if rep % 2 == 0 else contexts[::-1]:
            results[(which, "drain")].append(context_run(which, url, args.jobs))
    import MySQLdb as mysqldb

    text = summary(results)
    text += (
        f"\n\nMariaDB at {parse_url(url).host}; PyMySQL {pymysql.__version__}, mysqlclient "
        f"{'.'.join(map(str, mysqldb.version_info[:3]))}; drain of {args.jobs:,} jobs, "
        f"{args.enqueue:,} single-row INSERTs, {args.jobs:,} rows in 100-row INSERTs; "
        f"{args.repeat} repetitions, the drivers' order alternating. Client CPU per job "
        "(time.process_time of this process) is the robust figure: wall time also holds the "
        "server's work and whatever else the machine runs (load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs). "
        "The claim statements were byte-identical on both drivers."
        f"\nCommand: {command_line()}"
    )
    if contexts:
        text += "\n\nThe drain in context, per job (the same runs' drains, and the plain cycle's and the "
        text += "worker's, run in the same repetitions):\n\n" + context_table(results)
    emit("MySQL drivers: PyMySQL against mysqlclient, batchq's statements", text, "mysql-drivers")


if __name__ == "__main__":
    main()
