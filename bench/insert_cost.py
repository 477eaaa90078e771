"""Where an enqueue's time goes: the server's INSERT, batchq's statement, batchq's Python.

    .venv/bin/python bench/insert_cost.py --backend mysql [--calls 2000] [--jobs 20000] [--repeat 3]

Each row is measured twice: as one single-row INSERT in autocommit per job (`enqueue()`), and
as INSERTs of 100 rows (`enqueue_many()`); wall and client CPU per job, medians of --repeat
runs, each on freshly emptied tables.

  plain INSERT           the plain cycle's statement (bench/plain_cycle.py): task, payload, run_at
  `enqueue` statement    batchq's statement that spells out every option (delays, keys, expiry,
                         partitions), sent on the same bare driver connection
  `enqueue_now`          batchq's statement for a job due now with none of them (what enqueue()
                         sends for such a job since issue 29), on the same connection
  Queue.enqueue          the whole call (options checked, payload encoded, enqueue_now sent)
  what-if copy           `enqueue_now` into a copy of batchq_job that lacks one cost, to price it:
                         MySQL: without the three indexes that only jobs with a key need (unique
                         key, concurrency key, expiry), what moving those keys off the job row
                         would buy where no index is partial; PostgreSQL: without the NOTIFY
                         trigger (a row-level trigger: one call per row)

The statement rows are sent with their parameters built before the clock starts (on MySQL a
100-row statement is built whole beforehand, as batchq splices its rows), so between them
they differ only in what the server does; Queue.enqueue against `enqueue_now` is batchq's
Python. "index entries" counts, per job, the rows written into the table's indexes (its
primary key included), from each index's predicate: MariaDB has no partial index, so every
index takes every row there.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from batchq import Queue
from batchq.backends.mysql_statements import VALUES
from batchq.stores.jobs import _multi_row_insert

from loads import reset
from machine import server_info
from options import parse, parser
from plain_cycle import PlainCycle
from report import command_line, emit, table
from settings import TASK, url_for
from stats import med_range

PER_INSERT = 100
PAYLOAD = b'{"i": 1}'
COPY = "batchq_job_what_if"
KEY_INDEXES = ("batchq_job_unique", "batchq_job_concurrency", "batchq_job_expiry")
WHAT_IF = {  # backend: (the row's name, the copy's DDL after its DROP)
    "mysql": (
        "`enqueue_now`, no key indexes",
        [
            f"CREATE TABLE {COPY} LIKE batchq_job",
            f"ALTER TABLE {COPY} " + ", ".join(f"DROP INDEX {index}" for index in KEY_INDEXES),
        ],
    ),
    # LIKE ... INCLUDING ALL copies columns, defaults, constraints and indexes, never triggers.
    "postgresql": (
        "`enqueue_now`, no NOTIFY trigger",
        [f"CREATE TABLE {COPY} (LIKE batchq_job INCLUDING ALL)"],
    ),
}


def measure(jobs: int, send: Callable[[], None]) -> tuple[float, float]:
    """(wall µs per job, client CPU µs per job) of one ``send``."""
    cpu0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    send()
    wall, cpu1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return wall / jobs * 1e6, cpu / jobs * 1e6


class Statements:
    """The four ways to write jobs, on one backend: the plain cycle's connection sends the
    statements, a Queue makes the whole calls."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        reset(backend)  # batchq's tables made, for the template's reads
        self.cycle = PlainCycle(backend)
        self.queue = Queue(url_for(backend), task_modules="noop_jobs")
        self.template = self.queue.builder.template(self.queue.builder.spec(TASK))

    def empty(self) -> None:
        self.cycle.recreate()
        reset(self.backend)
        if self.backend in WHAT_IF:
            self._execute(f"DROP TABLE IF EXISTS {COPY}")
            for statement in WHAT_IF[self.backend][1]:
                self._execute(statement)

    def plain(self, per_call: int) -> Callable[[int], None]:
        cur, head, row = self.cycle.cur, self.cycle.insert_head, self.cycle.row_sql
        statement = head + ",".join([row] * per_call)
        params = [value for _ in range(per_call) for value in (TASK, PAYLOAD)]
        return lambda calls: _repeat(calls, lambda: cur.execute(statement, params))

    def batchq_statement(self, name: str, per_call: int, table: str = "batchq_job") -> Callable[[int], None]:
        """batchq's statement ``name`` (enqueue or enqueue_now) as batchq sends it for
        ``per_call`` jobs, on the plain cycle's connection, into ``table``."""
        cur = self.cycle.cur
        sql = self._statement(name, table)
        row = {**self.template, "payload": PAYLOAD}
        if per_call == 1:
            return lambda calls: _repeat(calls, lambda: cur.execute(sql, row))
        if self.backend == "postgresql":
            many = self._statement(name.replace("enqueue", "enqueue_many"), table)
            batch = {**self.template, "payloads": [PAYLOAD] * per_call}
            return lambda calls: _repeat(calls, lambda: cur.execute(many, batch))
        if self.backend == "sqlite":
            many = _multi_row_insert(sql, per_call)
            batch = {**self.template, **{f"p{n}": PAYLOAD for n in range(per_call)}}
            return lambda calls: _repeat(calls, lambda: cur.execute(many, batch))
        head, row_sql = VALUES.split(sql.strip().rstrip(";"), maxsplit=1)
        whole = f"{head} VALUES " + ",".join([cur.mogrify(row_sql, row)] * per_call)
        return lambda calls: _repeat(calls, lambda: cur.execute(whole))

    def _statement(self, name: str, table: str) -> str:
        return self.queue.backend.sql(name).replace("INSERT INTO batchq_job ", f"INSERT INTO {table} ")

    def queue_calls(self, per_call: int) -> Callable[[int], None]:
        if per_call == 1:
            return lambda calls: _repeat(calls, lambda: self.queue.enqueue(TASK, {"i": 1}))
        payloads = [{"i": n} for n in range(per_call)]
        return lambda calls: _repeat(calls, lambda: self.queue.enqueue_many(TASK, payloads))

    def index_entries(self, table: str = "batchq_job") -> float:
        """Index entries per job of the jobs in ``table`` now (all written by one kind of row):
        the rows its primary key and each index hold, from the index's predicate."""
        if self.backend == "mysql":  # no partial index: every index holds every row
            [(indexes,)] = self._fetch(
                "SELECT COUNT(DISTINCT index_name) FROM information_schema.statistics"
                f" WHERE table_schema = DATABASE() AND table_name = '{table}'"
            )
            return float(indexes)
        if self.backend == "postgresql":
            predicates = [
                pred
                for (pred,) in self._fetch(
                    "SELECT pg_get_expr(indpred, indrelid) FROM pg_index"
                    f" WHERE indrelid = '{table}'::regclass"
                )
            ]
        else:  # SQLite: the table is its rowid b-tree; an index's predicate follows its WHERE
            predicates = [None] + [
                sql.split(" WHERE ", 1)[1] if sql and " WHERE " in sql else None
                for (sql,) in self._fetch(
                    f"SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = '{table}'"
                )
            ]
        [(jobs,)] = self._fetch(f"SELECT COUNT(*) FROM {table}")
        entries = [
            self._fetch(f"SELECT COUNT(*) FROM {table} WHERE {pred or 'TRUE'}")[0][0] for pred in predicates
        ]
        return sum(entries) / jobs

    def _execute(self, sql: str) -> None:
        self.cycle.cur.execute(sql)

    def _fetch(self, sql: str) -> Sequence[Any]:
        self.cycle.cur.execute(sql)
        return self.cycle.cur.fetchall()  # type: ignore[no-any-return]

    def close(self) -> None:
        if self.backend in WHAT_IF:
            self._execute(f"DROP TABLE IF EXISTS {COPY}")
        self.cycle.close()
        self.queue.close()


def _repeat(calls: int, call: Callable[[], object]) -> None:
    for _ in range(calls):
        call()


def main() -> None:
    ap = parser(
        __doc__, jobs=20000, jobs_help="jobs per 100-row measurement", quick={"jobs": 2000, "calls": 200}
    )
    ap.add_argument("--calls", type=int, default=2000, help="single-row INSERTs per measurement")
    args = parse(ap)
    s = Statements(args.backend)
    rows = []
    for per_call, jobs in ((1, args.calls), (PER_INSERT, args.jobs)):
        cases: list[tuple[str, Callable[[int], None]]] = [
            ("plain INSERT", s.plain(per_call)),
            ("`enqueue` statement", s.batchq_statement("enqueue", per_call)),
            ("`enqueue_now` statement", s.batchq_statement("enqueue_now", per_call)),
            ("Queue.enqueue" if per_call == 1 else "Queue.enqueue_many", s.queue_calls(per_call)),
        ]
        what_if = WHAT_IF.get(args.backend)
        if what_if is not None:
            cases.append((what_if[0], s.batchq_statement("enqueue_now", per_call, COPY)))
        figures: dict[str, tuple[list[float], list[float], float]] = {}
        for _ in range(args.repeat):
            for name, send in cases:
                s.empty()
                send(1)  # a warm-up call: statements prepared, caches filled
                wall, cpu = measure(jobs, partial(send, jobs // per_call))
                walls, cpus, _ = figures.setdefault(name, ([], [], 0.0))
                walls.append(wall)
                cpus.append(cpu)
                entries = (
                    2.0  # plain_job: its id and its claim index
                    if name == "plain INSERT"
                    else s.index_entries(COPY if what_if and name == what_if[0] else "batchq_job")
                )
                figures[name] = (walls, cpus, entries)
        label = "1 row per INSERT" if per_call == 1 else f"{per_call} rows per INSERT"
        for name, (walls, cpus, entries) in figures.items():
            rows.append(
                [label, name, med_range(walls, "{:,.1f}"), med_range(cpus, "{:,.1f}"), f"{entries:g}"]
            )
    s.close()
    info = ", ".join(f"{k} {v}" for k, v in server_info(args.backend).items())
    header = [f"{args.backend}", "what", "wall µs/job", "client CPU µs/job", "index entries/job"]
    emit(
        f"Where an enqueue's time goes, {args.backend}",
        f"{command_line()}\n\n{table(header, rows)}\n\nServer: {info}",
        f"insert_cost_{args.backend}",
    )


if __name__ == "__main__":
    main()
