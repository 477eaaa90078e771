"""The plain cycle of seed 004, written directly with the drivers: the floor batchq must beat.

Its own table, nothing of batchq's (no queue column, no claim token, no pause table):

    plain_job (id, task, payload, status, priority, run_at, processing_at, error_count)
    one index on (status, priority, id)

claim    one transaction: SELECT ... WHERE status = 0 AND run_at <= now ORDER BY priority, id
         LIMIT 1 FOR UPDATE SKIP LOCKED (SQLite: BEGIN IMMEDIATE, no FOR UPDATE), then
         UPDATE ... SET status = 1, processing_at = now; COMMIT
call     json.loads(payload) and the no-op
ack      DELETE in autocommit: two commits per job
keep     (--keep) each job measured (wall clock, thread CPU time), and the ack becomes one
         transaction: a multi-row INSERT of the finished jobs (id, task, payload, finished_at, wall,
         CPU) into plain_history (primary key, one index on finished_at), then the DELETE
batch    claim up to N in one transaction (LIMIT N, one UPDATE ... IN), one DELETE ... IN per batch
enqueue  one single-row INSERT in autocommit; enqueue_many: one multi-row INSERT per 100 rows,
         each payload serialised with json.dumps

Sessions are the drivers' defaults apart from autocommit (and WAL on SQLite, as batchq uses).

    python bench/plain_cycle.py --backend mysql [--batch 100] [--keep]   # one draining worker process
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from noop_jobs import noop
from options import parse, parser
from settings import TASK, URLS

SCHEMA = {
    "mysql": [
        "DROP TABLE IF EXISTS plain_job",
        "CREATE TABLE plain_job (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,"
        " task VARCHAR(255) NOT NULL, payload MEDIUMBLOB, status TINYINT UNSIGNED NOT NULL DEFAULT 0,"
        " priority SMALLINT NOT NULL DEFAULT 0, run_at DATETIME(6) NOT NULL,"
        " processing_at DATETIME(6) NULL, error_count TINYINT UNSIGNED NOT NULL DEFAULT 0,"
        " KEY plain_job_claim (status, priority, id)) ENGINE=InnoDB",
        "DROP TABLE IF EXISTS plain_history",
        "CREATE TABLE plain_history (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, task VARCHAR(255) NOT NULL,"
        " payload MEDIUMBLOB, finished_at DATETIME(6) NOT NULL, wall_seconds DOUBLE, cpu_seconds DOUBLE,"
        " KEY plain_history_finished (finished_at)) ENGINE=InnoDB",
    ],
    "postgresql": [
        "DROP TABLE IF EXISTS plain_job",
        "CREATE TABLE plain_job (id BIGSERIAL PRIMARY KEY, task TEXT NOT NULL, payload BYTEA,"
        " status SMALLINT NOT NULL DEFAULT 0, priority SMALLINT NOT NULL DEFAULT 0,"
        " run_at TIMESTAMPTZ NOT NULL, processing_at TIMESTAMPTZ, error_count SMALLINT NOT NULL DEFAULT 0)",
        "CREATE INDEX plain_job_claim ON plain_job (status, priority, id)",
        "DROP TABLE IF EXISTS plain_history",
        "CREATE TABLE plain_history (id BIGINT PRIMARY KEY, task TEXT NOT NULL, payload BYTEA,"
        " finished_at TIMESTAMPTZ NOT NULL, wall_seconds FLOAT8, cpu_seconds FLOAT8)",
        "CREATE INDEX plain_history_finished ON plain_history (finished_at)",
    ],
    "sqlite": [
        "DROP TABLE IF EXISTS plain_job",
        "CREATE TABLE plain_job (id INTEGER PRIMARY KEY AUTOINCREMENT, task TEXT NOT NULL, payload BLOB,"
        " status INTEGER NOT NULL DEFAULT 0, priority INTEGER NOT NULL DEFAULT 0, run_at TEXT NOT NULL,"
        " processing_at TEXT, error_count INTEGER NOT NULL DEFAULT 0)",
        "CREATE INDEX plain_job_claim ON plain_job (status, priority, id)",
        "DROP TABLE IF EXISTS plain_history",
        "CREATE TABLE plain_history (id INTEGER PRIMARY KEY, task TEXT NOT NULL, payload BLOB,"
        " finished_at TEXT NOT NULL, wall_seconds REAL, cpu_seconds REAL)",
        "CREATE INDEX plain_history_finished ON plain_history (finished_at)",
    ],
}
NOW = {
    "mysql": "UTC_TIMESTAMP(6)",
    "postgresql": "now()",
    "sqlite": "strftime('%Y-%m-%d %H:%M:%f', 'now')",
}
LOCK = {"mysql": " FOR UPDATE SKIP LOCKED", "postgresql": " FOR UPDATE SKIP LOCKED", "sqlite": ""}
MARK = {"mysql": "%s", "postgresql": "%s", "sqlite": "?"}


class PlainCycle:
    """One connection running the plain cycle's statements on one backend."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        now, mark = NOW[backend], MARK[backend]
        self.claim_sql = (
            f"SELECT id, task, payload FROM plain_job WHERE status = 0 AND run_at <= {now}"
            f" ORDER BY priority, id LIMIT {mark}{LOCK[backend]}"
        )
        self.mark_one = f"UPDATE plain_job SET status = 1, processing_at = {now} WHERE id = {mark}"
        self.delete_one = f"DELETE FROM plain_job WHERE id = {mark}"
        self.row_sql = f"({mark}, {mark}, {now})"
        self.insert_head = "INSERT INTO plain_job (task, payload, run_at) VALUES "
        self.keep_head = (
            "INSERT INTO plain_history (id, task, payload, finished_at, wall_seconds, cpu_seconds) VALUES "
        )
        self.keep_row = f"({mark}, {mark}, {mark}, {now}, {mark}, {mark})"
        self.conn = connect(backend)
        self.cur = self.conn.cursor()

    def begin(self) -> None:
        self.cur.execute("BEGIN IMMEDIATE" if self.backend == "sqlite" else "BEGIN")

    def commit(self) -> None:
        self.conn.commit() if self.backend != "sqlite" else self.cur.execute("COMMIT")

    def _in(self, ids: Sequence[int]) -> str:
        return "(" + ",".join(MARK[self.backend] for _ in ids) + ")"

    def claim(self, limit: int) -> list[tuple[Any, ...]]:
        """Claim up to ``limit`` jobs; a deadlock (batch claims under REPEATABLE READ) is retried."""
        while True:
            try:
                return self._claim_once(limit)
            except Exception as exc:
                self.conn.rollback() if self.backend != "sqlite" else self.cur.execute("ROLLBACK")
                if not is_deadlock(exc):
                    raise

    def _claim_once(self, limit: int) -> list[tuple[Any, ...]]:
        self.begin()
        self.cur.execute(self.claim_sql, (limit,))
        jobs = self.cur.fetchall()
        if len(jobs) == 1:
            self.cur.execute(self.mark_one, (jobs[0][0],))
        elif jobs:
            ids = [job[0] for job in jobs]
            now = NOW[self.backend]
            self.cur.execute(
                f"UPDATE plain_job SET status = 1, processing_at = {now} WHERE id IN {self._in(ids)}", ids
            )
        self.commit()
        return list(jobs)

    def ack(self, ids: Sequence[int]) -> None:
        if len(ids) == 1:
            self.cur.execute(self.delete_one, (ids[0],))
        else:
            self.cur.execute(f"DELETE FROM plain_job WHERE id IN {self._in(ids)}", list(ids))

    def keep_and_ack(self, jobs: Sequence[tuple[Any, ...]], figures: Sequence[tuple[float, float]]) -> None:
        """The finished jobs copied into plain_history with their figures, then deleted: one
        transaction."""
        params: list[Any] = []
        for (job_id, task, payload), (wall, cpu) in zip(jobs, figures):
            params += (job_id, task, payload, wall, cpu)
        self.begin()
        self.cur.execute(self.keep_head + ",".join([self.keep_row] * len(jobs)), params)
        self.ack([job[0] for job in jobs])
        self.commit()

    def drain(self, batch: int = 1, keep: bool = False) -> int:
        done = 0
        while jobs := self.claim(batch):
            if keep:
                self.keep_and_ack(jobs, [measured(noop, json.loads(job[2])) for job in jobs])
            else:
                for job in jobs:
                    noop(json.loads(job[2]))
                self.ack([job[0] for job in jobs])
            done += len(jobs)
        return done

    def enqueue(self, payload: Any) -> None:
        self.cur.execute(self.insert_head + self.row_sql, (TASK, json.dumps(payload).encode()))

    def enqueue_many(self, payloads: Sequence[Any]) -> None:
        params: list[Any] = []
        for payload in payloads:
            params += (TASK, json.dumps(payload).encode())
        self.cur.execute(self.insert_head + ",".join([self.row_sql] * len(payloads)), params)

    def recreate(self) -> None:
        for statement in SCHEMA[self.backend]:
            self.cur.execute(statement)
        if self.backend == "sqlite":
            self.cur.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def count(self, table: str = "plain_job") -> int:
        self.cur.execute(f"SELECT COUNT(*) FROM {table}")
        return int(self.cur.fetchone()[0])

    def close(self) -> None:
        self.conn.close()


def measured(call: Any, arg: Any) -> tuple[float, float]:
    """Call ``call(arg)``; its wall time and its thread's CPU time (user + system), seconds."""
    start_cpu, start = resource.getrusage(resource.RUSAGE_THREAD), time.monotonic()
    call(arg)
    wall, end_cpu = time.monotonic() - start, resource.getrusage(resource.RUSAGE_THREAD)
    return wall, end_cpu.ru_utime + end_cpu.ru_stime - start_cpu.ru_utime - start_cpu.ru_stime


def is_deadlock(exc: Exception) -> bool:
    return getattr(exc, "sqlstate", None) == "40P01" or (exc.args[:1] == (1213,))


def connect(backend: str) -> Any:
    url = urlsplit(URLS[backend])
    if backend == "sqlite":
        import sqlite3

        path = url.path[1:]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        return conn
    user, password, database = unquote(url.username or ""), unquote(url.password or ""), url.path[1:]
    if backend == "mysql":
        import pymysql

        return pymysql.connect(
            host=url.hostname,
            port=url.port or 3306,
            user=user or "root",
            password=password,
            database=database,
            autocommit=True,
            ssl_disabled=True,
        )
    import psycopg

    return psycopg.connect(
        host=url.hostname, port=url.port or 5432, user=user or None, dbname=database, autocommit=True
    )


def main() -> None:
    ap = parser(__doc__, repeat=None, batch=1)
    ap.add_argument("--keep", action="store_true", help="copy each finished job into plain_history")
    args = parse(ap)
    cycle = PlainCycle(args.backend)
    cycle.drain(args.batch, args.keep)
    cycle.close()


if __name__ == "__main__":
    main()
