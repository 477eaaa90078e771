"""Where each row of bench/vs_plain.py's table goes, per job: the server's counters and the
client's CPU, the plain cycle beside batchq, in one process.

    .venv/bin/python bench/per_job.py --backend mysql|postgresql|sqlite --jobs 20000 --enqueue 3000 --repeat 3

The rows of vs_plain at one process, each run in this process (no process start-up, so the
figures are the cycle's own): `run` and `run --batch 100` drain --jobs pre-loaded no-op jobs
(the plain cycle's PlainCycle.drain against batchq's Worker.run(), as `batchq run` runs it);
`enqueue()` sends --enqueue single-row INSERTs, `enqueue_many()` --jobs rows 100 per call. Per
job, medians of --repeat repetitions, the sides interleaved:

  wall, client CPU   perf_counter and getrusage of this process (SQLite: the engine's work too)
  statements         sent to the server: PostgreSQL pg_stat_statements calls; MySQL Questions;
                     SQLite the connection's trace callback (BEGIN and COMMIT included)
  commits            PostgreSQL xact_commit (a read-only autocommit statement counts too);
                     MySQL Handler_commit; SQLite not counted
  rows written       rows inserted, updated and deleted: pg_stat_database tup_*; MySQL
                     Handler_write, _update and _delete; SQLite the connection's total_changes()
  syncs, log bytes   WAL flushes to disk and WAL bytes: pg_stat_wal wal_sync and the WAL
                     position; MySQL Innodb_data_fsyncs and Innodb_os_log_written; SQLite none
  index entries      rows a job writes into its table's indexes, primary key included (as
                     bench/insert_cost.py counts them): the plain table has two

PostgreSQL runs on a private cluster (bench/private_postgresql.py, autovacuum off, with
pg_stat_statements preloaded; the shared server cannot load it without a restart); MySQL on
BENCH_MYSQL_URL's server, whose global counters take in any other session's work: run it on a
quiet server. The counters count; the timings are one process's, on this machine.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from insert_cost import Statements

from batchq import Queue
from batchq.runtime.worker import RunOptions, Worker

import settings
from loads import bulk_load, reset
from options import parse, parser
from plain_cycle import PlainCycle
from private_postgresql import private_cluster
from report import command_line, emit, table
from settings import TASK, url_for
from stats import median
from vs_plain import plain_load

FIGURES = ("wall µs", "client CPU µs", "statements", "commits", "rows written", "syncs", "log bytes")
PG_SETTINGS = {"shared_preload_libraries": "pg_stat_statements", "autovacuum": "off"}
PG_COUNTERS = """
SELECT (SELECT COALESCE(SUM(calls), 0) FROM pg_stat_statements
        WHERE query NOT LIKE '%%pg_stat%%' AND query NOT LIKE '%%pg_current_wal%%'),
       xact_commit, tup_inserted + tup_updated + tup_deleted,
       (SELECT wal_sync FROM pg_stat_wal), pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')
FROM pg_stat_database WHERE datname = current_database()
"""
MYSQL_COUNTERS = (
    "Questions",
    "Handler_commit",
    "Handler_write",
    "Handler_update",
    "Handler_delete",
    "Innodb_data_fsyncs",
    "Innodb_os_log_written",
)


class ServerCounters:
    """The server's cumulative counters, read on a connection of their own: statements,
    commits, rows written, syncs and log bytes (None where the backend has no such counter)."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.cycle = PlainCycle(backend) if backend != "sqlite" else None

    def read(self) -> list[float | None]:
        if self.cycle is None:
            return [None] * 5
        cur = self.cycle.cur
        if self.backend == "postgresql":
            time.sleep(1.1)  # a backend reports its counters at most a second late (or on exit)
            cur.execute("SELECT pg_stat_clear_snapshot()")
            cur.execute(PG_COUNTERS)
            return [float(v) for v in cur.fetchone()]
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN %s", (MYSQL_COUNTERS,))
        status = {name: float(value) for name, value in cur.fetchall()}
        questions = status["Questions"] - 1  # not this SHOW
        rows = sum(status[f"Handler_{kind}"] for kind in ("write", "update", "delete"))
        return [
            questions,
            status["Handler_commit"],
            rows,
            status["Innodb_data_fsyncs"],
            status["Innodb_os_log_written"],
        ]

    def close(self) -> None:
        if self.cycle is not None:
            self.cycle.close()


class SQLiteTrace:
    """SQLite's own count of a connection's statements and row changes."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.statements = conn, 0
        conn.set_trace_callback(self._count)

    def _count(self, _statement: str) -> None:
        self.statements += 1

    def read(self) -> list[float | None]:
        return [float(self.statements), None, float(self.conn.total_changes), None, None]


@contextmanager
def measured(
    jobs: int, counters: ServerCounters, conn: Any, close: Callable[[], None], out: list[list[float | None]]
) -> Iterator[None]:
    """Time the block, then ``close()`` its connections (a PostgreSQL backend reports its
    counters on exit); append its figures per job to ``out``. ``conn`` is the block's
    connection: on SQLite, traced for its counts."""
    trace = SQLiteTrace(conn) if counters.backend == "sqlite" else None
    before = trace.read() if trace else counters.read()
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    yield
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    traced = trace.read() if trace else None  # before close(): the trace is the connection's
    close()
    after = traced if traced else counters.read()
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    deltas = [None if a is None or b is None else (a - b) / jobs for a, b in zip(after, before, strict=True)]
    out.append([wall / jobs * 1e6, cpu / jobs * 1e6, *deltas])


def plain_run(backend: str, jobs: int, batch: int, counters: ServerCounters, out: list) -> None:
    plain_load(backend, jobs)
    cycle = PlainCycle(backend)
    with measured(jobs, counters, cycle.conn, cycle.close, out):
        assert cycle.drain(batch) == jobs


def batchq_run(backend: str, jobs: int, batch: int, counters: ServerCounters, out: list) -> None:
    reset(backend)
    bulk_load(backend, jobs)
    queue = Queue(url_for(backend), task_modules="noop_jobs")
    worker = Worker(queue, RunOptions(batch_size=batch))
    with measured(jobs, counters, queue.backend.conn, queue.close, out):
        assert worker.run().succeeded == jobs


def plain_enqueue(backend: str, jobs: int, per_call: int, counters: ServerCounters, out: list) -> None:
    cycle = PlainCycle(backend)
    cycle.recreate()
    with measured(jobs, counters, cycle.conn, cycle.close, out):
        send_all(cycle.enqueue, cycle.enqueue_many, jobs, per_call)


def batchq_enqueue(backend: str, jobs: int, per_call: int, counters: ServerCounters, out: list) -> None:
    reset(backend)
    queue = Queue(url_for(backend), task_modules="noop_jobs")
    queue.enqueue(TASK, {"i": -1})  # connected, the task imported and its template kept
    with measured(jobs, counters, queue.backend.conn, queue.close, out):
        send_all(partial(queue.enqueue, TASK), partial(queue.enqueue_many, TASK), jobs, per_call)


def send_all(
    one: Callable[[Any], object], many: Callable[[list[Any]], object], jobs: int, per_call: int
) -> None:
    """``jobs`` payloads, one per ``one`` call, or ``per_call`` per ``many`` call."""
    for start in range(0, jobs, per_call):
        if per_call == 1:
            one({"i": start})
        else:
            many([{"i": start + k} for k in range(per_call)])


def cell(values: list[float | None], column: int) -> str:
    picked = [row[column] for row in values]
    if any(v is None for v in picked):
        return "–"
    value = median([float(v) for v in picked if v is not None])
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def main() -> None:
    ap = parser(__doc__, jobs=20000, quick={"jobs": 2000, "enqueue": 300, "repeat": 1})
    ap.add_argument("--enqueue", type=int, default=3000, help="single-row enqueues per repetition")
    args = parse(ap)
    with _server(args.backend):
        report(args.backend, args.jobs, args.enqueue, args.repeat)


@contextmanager
def _server(backend: str) -> Iterator[None]:
    if backend != "postgresql":
        yield
        return
    with private_cluster(PG_SETTINGS) as url:
        settings.URLS["postgresql"] = url
        conn = PlainCycle("postgresql")
        conn.cur.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.close()
        yield


def report(backend: str, jobs: int, enqueues: int, repeat: int) -> None:
    cases: list[tuple[str, Callable[..., None], Callable[..., None], tuple[int, int]]] = [
        ("`run`", plain_run, batchq_run, (jobs, 1)),
        ("`run --batch 100`", plain_run, batchq_run, (jobs, 100)),
        ("`enqueue()`", plain_enqueue, batchq_enqueue, (enqueues, 1)),
        ("`enqueue_many()` of 100", plain_enqueue, batchq_enqueue, (jobs, 100)),
    ]
    statements = Statements(backend)  # also makes batchq's tables
    counters = ServerCounters(backend)
    figures: dict[tuple[str, str], list[list[float | None]]] = {}
    for rep in range(repeat):
        for name, plain, batchq, (n, size) in cases:
            for side, run in (("plain cycle", plain), ("batchq", batchq)):
                run(backend, n, size, counters, figures.setdefault((name, side), []))
                print(
                    f"# rep {rep + 1} {name}, {side}: {figures[name, side][-1][0]:.1f} µs/job",
                    file=sys.stderr,
                )
    # batchq's: those of the jobs the last enqueue_many left in its table
    entries = {"plain cycle": "2", "batchq": f"{statements.index_entries():g}"}
    counters.close()
    statements.close()
    rows = [
        [name, side, *(cell(values, column) for column in range(len(FIGURES))), entries[side]]
        for (name, side), values in figures.items()
    ]
    header = [f"{backend}, per job", "", *FIGURES, "index entries"]
    emit(
        f"Per job, plain cycle and batchq, {backend}",
        f"{command_line()}\n\n{table(header, rows)}",
        f"per_job_{backend}",
    )


if __name__ == "__main__":
    main()
