"""Shared pieces of the benchmarks: URLs, raw-driver floors, resets, statistics, tables.

Every floor statement comes from ``batchq.sqlfiles.queries(dialect)`` (the very text batchq
runs); the only derived statement is the multi-row enqueue floor (the enqueue row repeated,
one statement, as batchq's MySQL enqueue_many sends). Adding a backend
means adding one ``Floor`` subclass and one entry in ``URLS`` / ``FLOORS``.

Drivers are imported by the floor that uses them (PyMySQL for MySQL/MariaDB, psycopg for
PostgreSQL), so a missing driver only breaks its own backend.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from batchq import Queue
from batchq.config import parse_url
from batchq.sqlfiles import queries

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
PYTHON = sys.executable
BIN_DIR = Path(sys.executable).parent
BATCHQ = str(BIN_DIR / "batchq")
RESULTS_DIR = BENCH_DIR / "results"

URLS = {
    "mysql": os.environ.get("BENCH_MYSQL_URL", "mysql://root@127.0.0.1:3306/batchq_bench"),
    "sqlite": os.environ.get("BENCH_SQLITE_URL", "sqlite:////tmp/batchq_bench/bench.db"),
    "postgresql": os.environ.get("BENCH_POSTGRESQL_URL", "postgresql://postgres@127.0.0.1:5432/batchq_bench"),
}
BACKENDS = tuple(URLS)
TASK = "noop_jobs:noop"
FORBIDDEN_DATABASES = {"test"}


def url_for(backend: str) -> str:
    url = URLS[backend]
    parsed = parse_url(url)
    if parsed.dialect != "sqlite" and (
        parsed.database in FORBIDDEN_DATABASES or parsed.database.startswith("batchq_test")
    ):
        raise SystemExit(f"refusing to benchmark in database {parsed.database!r}")
    return url


def bench_env(backend: str, **extra: str) -> dict[str, str]:
    """Environment for `batchq run` and floor subprocesses: no-op jobs importable from bench/."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(BENCH_DIR) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["BATCHQ_TASK_MODULES"] = "noop_jobs"
    env["BATCHQ_URL"] = url_for(backend)
    env.update(extra)
    return env


def compile_batchq() -> None:
    """Byte-compile batchq as `pip install` does; an editable checkout is otherwise compiled on
    every `batchq run` start wherever PYTHONDONTWRITEBYTECODE is set (as on the bench machine)."""
    import batchq.sql

    for package in (sys.modules["batchq"], batchq.sql):
        subprocess.run([PYTHON, "-m", "compileall", "-q", *package.__path__], check=True)


def payload_bytes(i: int) -> bytes:
    """What batchq stores for the payload {"i": i} (json, compact separators)."""
    return json.dumps({"i": i}, separators=(",", ":")).encode()


# -- raw-driver floors ---------------------------------------------------------------


def _renamed(sql: str, style: str, suffix: str) -> str:
    if style == "pyformat":
        return re.sub(r"%\((\w+)\)s", lambda m: f"%({m.group(1)}_{suffix})s", sql)
    return re.sub(r":(\w+)", lambda m: f":{m.group(1)}_{suffix}", sql)


def multi_row_insert(sql: str, rows: int, style: str) -> str:
    """The enqueue INSERT with its VALUES row repeated ``rows`` times (params suffixed _0.._n);
    a trailing RETURNING clause (PostgreSQL) is kept once, at the end."""
    head, sep, row = sql.partition("VALUES")
    if not sep:
        raise RuntimeError("enqueue statement has no VALUES")
    row, returning, tail = row.partition("RETURNING")
    values = ",\n".join(_renamed(row.strip(), style, str(i)) for i in range(rows))
    return head + "VALUES " + values + (f"\n{returning} {tail.strip()}" if returning else "")


class Floor:
    """The fastest a client can run batchq's statements: raw driver, no library around them."""

    dialect: str
    style: str  # paramstyle of the dialect's queries.sql

    def __init__(self, url: str) -> None:
        self.url = parse_url(url)
        self.q = queries(self.dialect)
        self.conn = self.connect()
        self._multi: dict[int, str] = {}

    def connect(self) -> Any:
        raise NotImplementedError

    @staticmethod
    def row(i: int, delay_us: int = 0) -> dict[str, Any]:
        seconds = delay_us / 1e6
        return {
            "queue": "default",
            "task": TASK,
            "payload": payload_bytes(i),
            "serializer": "json",
            "priority": 0,
            "max_errors": 10,
            "delay_us": delay_us,
            "delay_modifier": f"+{seconds:.6f} seconds",
        }

    def multi_sql(self, n: int) -> str:
        if n not in self._multi:
            self._multi[n] = multi_row_insert(self.q["enqueue"], n, self.style)
        return self._multi[n]

    @staticmethod
    def multi_params(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {f"{k}_{i}": v for i, row in enumerate(rows) for k, v in row.items()}

    # Transactions: claim_at/claim_batch_at open their own unless one is already open, as
    # batchq's Backend.transaction() joins an outer one.
    _in_txn = False

    def begin(self) -> None:
        raise NotImplementedError

    def commit(self) -> None:
        self.conn.commit()

    def ack_and_claim(self, job_id: int, old_token: str, worker: str, token: str) -> tuple | None:
        """batchq run's cycle: DELETE the finished job and claim the next in one transaction."""
        self.begin()
        self._in_txn = True
        try:
            self.ack(job_id, old_token)
            job = self.claim(worker, token)
        finally:
            self._in_txn = False
        self.commit()
        return job

    def drain_fused(self, worker: str, call: Callable[[Any], Any]) -> int:
        """Run the fused cycle until the queue is empty: ``call`` each job's stored payload,
        then DELETE it and claim the next in one transaction. Returns the jobs done."""
        done = 0
        token = os.urandom(16).hex()
        job = self.claim(worker, token)
        while job is not None:
            call(job[3])  # the payload, as stored (the floor does not decode it)
            done += 1
            next_token = os.urandom(16).hex()
            job = self.ack_and_claim(job[0], token, worker, next_token)
            token = next_token
        return done

    def level(self, below: int) -> int | None:
        """batchq's first claim statement: the top priority level with ready jobs."""
        rows = self.execute(self.q["next_priority"], {"queue": "default", "below": below})
        return rows[0][0] if rows else None

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        raise NotImplementedError

    def claim(self, worker: str, token: str) -> tuple | None:
        """batchq's claim: level by level, one priority level per short transaction."""
        below = 32768
        while (level := self.level(below)) is not None:
            job = self.claim_at(level, worker, token)
            if job is not None:
                return job
            below = level
        return None

    def claim_batch(self, n: int, worker: str, token: str) -> list[tuple]:
        below = 32768
        while (level := self.level(below)) is not None:
            jobs = self.claim_batch_at(level, n, worker, token)
            if jobs:
                return jobs
            below = level
        return []

    def close(self) -> None:
        self.conn.close()


class MySQLFloor(Floor):
    dialect = "mysql"
    style = "pyformat"

    def connect(self) -> Any:
        import pymysql
        from pymysql.constants import CLIENT

        u = self.url
        conn = pymysql.connect(
            host=u.host,
            port=u.port or 3306,
            user=u.user or "root",
            password=u.password,
            database=u.database,
            charset="utf8mb4",
            autocommit=True,
            client_flag=CLIENT.FOUND_ROWS,
        )
        self.cur = conn.cursor()
        # The same session batchq sets once per connection (UTC, READ COMMITTED).
        self.cur.execute("SET SESSION time_zone = '+00:00'")
        self.cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        return conn

    def begin(self) -> None:
        self.conn.begin()

    def enqueue(self, row: dict[str, Any]) -> None:
        self.cur.execute(self.q["enqueue"], row)

    def enqueue_multi(self, rows: Sequence[dict[str, Any]]) -> None:
        # One statement is one transaction in autocommit.
        self.cur.execute(self.multi_sql(len(rows)), self.multi_params(rows))

    def claim_at(self, level: int, worker: str, token: str) -> tuple | None:
        cur, own = self.cur, not self._in_txn
        if own:
            self.begin()
        cur.execute(self.q["claim_select_skip_locked"], {"queue": "default", "priority": level})
        job = cur.fetchone()
        if job is not None:
            cur.execute(self.q["claim_mark"], {"id": job[0], "worker": worker, "token": token})
        if own:
            self.commit()
        return job

    def ack(self, job_id: int, token: str) -> None:
        self.cur.execute(self.q["job_delete"], {"id": job_id, "token": token})

    def claim_batch_at(self, level: int, n: int, worker: str, token: str) -> list[tuple]:
        cur = self.cur
        self.conn.begin()
        cur.execute(
            self.q["claim_batch_select_skip_locked"], {"queue": "default", "priority": level, "limit": n}
        )
        jobs = list(cur.fetchall())
        if jobs:
            ids = [job[0] for job in jobs]
            cur.execute(self.q["claim_batch_mark"], {"ids": ids, "worker": worker, "token": token})
        self.conn.commit()
        return jobs

    def ack_batch(self, ids: Sequence[int], token: str) -> None:
        self.cur.execute(self.q["job_delete_batch"], {"ids": list(ids), "token": token})

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        self.cur.execute(sql, params)
        return list(self.cur.fetchall())


class SQLiteFloor(Floor):
    dialect = "sqlite"
    style = "named"

    def connect(self) -> Any:
        Path(self.url.database).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.url.database, timeout=30, isolation_level=None)
        # The same pragmas batchq sets per connection.
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def enqueue(self, row: dict[str, Any]) -> None:
        self.conn.execute(self.q["enqueue"], row)

    def enqueue_multi(self, rows: Sequence[dict[str, Any]]) -> None:
        # Autocommit: the one statement is its own transaction.
        self.conn.execute(self.multi_sql(len(rows)), self.multi_params(rows))

    def claim_at(self, level: int, worker: str, token: str) -> tuple | None:
        own = not self._in_txn
        if own:
            self.begin()
        params = {"queue": "default", "priority": level, "worker": worker, "token": token}
        job = self.conn.execute(self.q["claim"], params).fetchone()
        if own:
            self.commit()
        return job

    def ack(self, job_id: int, token: str) -> None:
        self.conn.execute(self.q["job_delete"], {"id": job_id, "token": token})

    def claim_batch_at(self, level: int, n: int, worker: str, token: str) -> list[tuple]:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        params = {"queue": "default", "priority": level, "worker": worker, "token": token, "limit": n}
        jobs = conn.execute(self.q["claim_batch"], params).fetchall()
        conn.execute("COMMIT")
        return jobs

    def ack_batch(self, ids: Sequence[int], token: str) -> None:
        self.conn.execute(self.q["job_delete_batch"], {"ids_json": json.dumps(list(ids)), "token": token})

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        return self.conn.execute(sql, params or ()).fetchall()


class PostgreSQLFloor(Floor):
    """psycopg 3 in autocommit, as batchq's PostgreSQL backend: every claim is ONE statement
    (UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING), a transaction by
    itself, with no BEGIN/COMMIT around it; BEGIN only where batchq opens one (the fused
    cycle, enqueue_many)."""

    dialect = "postgresql"
    style = "pyformat"

    def connect(self) -> Any:
        import psycopg

        u = self.url
        # The connection batchq's backend opens: autocommit, tuple rows (psycopg's default),
        # the same startup parameters, then the one session setting it makes (UTC).
        params: dict[str, Any] = {"connect_timeout": "10", "application_name": "batchq", **u.options}
        conn = psycopg.connect(
            host=u.host,
            port=u.port or 5432,
            user=u.user or None,
            password=u.password or None,
            dbname=u.database,
            autocommit=True,
            **params,
        )
        conn.execute("SET TIME ZONE 'UTC'")
        self.cur = conn.cursor()
        return conn

    def begin(self) -> None:
        # As batchq: BEGIN on the autocommit connection; conn.commit() then sends COMMIT.
        self.cur.execute("BEGIN")

    def enqueue(self, row: dict[str, Any]) -> None:
        self.cur.execute(self.q["enqueue"], row)
        self.cur.fetchone()  # RETURNING id (already received with the result)

    def enqueue_multi(self, rows: Sequence[dict[str, Any]]) -> None:
        # batchq's PostgreSQL enqueue_many: BEGIN; executemany(enqueue) (psycopg sends the
        # rows as one pipeline: one round trip, one INSERT statement per row); COMMIT.
        self.begin()
        self.cur.executemany(self.q["enqueue"], rows)
        self.commit()

    def enqueue_multi_row(self, rows: Sequence[dict[str, Any]]) -> None:
        """A reference, not batchq's path on PostgreSQL: ONE multi-row INSERT in autocommit
        (the enqueue VALUES row repeated, as batchq's MySQL enqueue_many sends)."""
        self.cur.execute(self.multi_sql(len(rows)), self.multi_params(rows))

    def claim_at(self, level: int, worker: str, token: str) -> tuple | None:
        # One statement: its own transaction in autocommit, or part of the open one (fused).
        params = {"queue": "default", "priority": level, "worker": worker, "token": token}
        self.cur.execute(self.q["claim"], params)
        return self.cur.fetchone()

    def ack(self, job_id: int, token: str) -> None:
        self.cur.execute(self.q["job_delete"], {"id": job_id, "token": token})

    def claim_batch_at(self, level: int, n: int, worker: str, token: str) -> list[tuple]:
        params = {"queue": "default", "priority": level, "worker": worker, "token": token, "limit": n}
        self.cur.execute(self.q["claim_batch"], params)
        return self.cur.fetchall()

    def ack_batch(self, ids: Sequence[int], token: str) -> None:
        # batchq binds the ids as a list (psycopg sends an array) for `id = ANY(%(ids)s)`.
        self.cur.execute(self.q["job_delete_batch"], {"ids": list(ids), "token": token})

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        self.cur.execute(sql, params)
        return list(self.cur.fetchall()) if self.cur.description else []


FLOORS: dict[str, type[Floor]] = {"mysql": MySQLFloor, "sqlite": SQLiteFloor, "postgresql": PostgreSQLFloor}


def floor_for(backend: str) -> Floor:
    return FLOORS[backend](url_for(backend))


# -- schema, reset, bulk loads ---------------------------------------------------------


def reset(backend: str) -> None:
    """Create the schema with batchq's own init_db, then empty the tables."""
    q = Queue(url_for(backend))
    q.init_db()
    q.close()
    floor = floor_for(backend)
    if backend == "mysql":
        floor.execute("TRUNCATE TABLE batchq_job")
    elif backend == "postgresql":
        # A fresh heap and indexes: no dead rows left by the previous run (ids restart too,
        # as MySQL's TRUNCATE does). TRUNCATE fires no row trigger (no NOTIFY).
        floor.execute("TRUNCATE TABLE batchq_job RESTART IDENTITY")
    else:
        floor.execute("DELETE FROM batchq_job")
        floor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    floor.execute("DELETE FROM batchq_queue")
    floor.close()


def bulk_load(
    backend: str,
    n: int,
    *,
    delay_seconds: float = 0.0,
    status: str = "ready",
    priority: int = 0,
    start: int = 0,
) -> None:
    """Insert n jobs server-side (setup only, never timed). Due ones get run_at in the past."""
    if n <= 0:
        return
    floor = floor_for(backend)
    chunk = 100_000
    for lo in range(start, start + n, chunk):
        hi = min(lo + chunk, start + n)
        if backend == "mysql":
            run_at = (
                f"UTC_TIMESTAMP(6) + INTERVAL {delay_seconds} SECOND"
                if delay_seconds
                else "UTC_TIMESTAMP(6) - INTERVAL 1 SECOND"
            )
            floor.execute(
                "INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at,"
                " error_count, max_errors, created_at)"
                f" SELECT 'default', '{TASK}', CONCAT('{{\"i\":', seq, '}}'), 'json', {priority},"
                f" '{status}', {run_at}, {10 if status == 'failed' else 0}, 10, UTC_TIMESTAMP(6)"
                f" FROM seq_{lo + 1}_to_{hi}"
            )
        elif backend == "postgresql":
            # One INSERT ... SELECT over generate_series, in autocommit. batchq's NOTIFY
            # trigger fires for the due ready rows (PostgreSQL folds them into one NOTIFY).
            run_at = (
                f"statement_timestamp() + interval '{delay_seconds} seconds'"
                if delay_seconds
                else "statement_timestamp() - interval '1 second'"
            )
            floor.execute(
                "INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at,"
                " error_count, max_errors, created_at)"
                f" SELECT 'default', '{TASK}', convert_to('{{\"i\":' || i || '}}', 'UTF8'), 'json',"
                f" {priority}, '{status}', {run_at}, {10 if status == 'failed' else 0}, 10,"
                " statement_timestamp()"
                " FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) AS s(i)",
                {"lo": lo + 1, "hi": hi},
            )
        else:
            modifier = f"+{delay_seconds} seconds" if delay_seconds else "-1 seconds"
            floor.execute("BEGIN")
            floor.execute(
                "WITH RECURSIVE s(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM s WHERE i < ?)"
                " INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at,"
                " error_count, max_errors, created_at)"
                f" SELECT 'default', '{TASK}', CAST('{{\"i\":' || i || '}}' AS BLOB), 'json', {priority},"
                f" '{status}', strftime('%Y-%m-%d %H:%M:%f', 'now', '{modifier}'),"
                f" {10 if status == 'failed' else 0}, 10, strftime('%Y-%m-%d %H:%M:%f', 'now') FROM s",
                (lo + 1, hi),
            )
            floor.execute("COMMIT")
    if backend == "mysql":
        floor.execute("ANALYZE TABLE batchq_job")
    elif backend == "postgresql":
        # VACUUM too: it sets the hint bits and the visibility map now rather than during the
        # timed run, and resets the insert count that would start an autovacuum mid-run.
        floor.execute("VACUUM (ANALYZE) batchq_job")
    else:
        floor.execute("ANALYZE")
    floor.close()


def count_jobs(backend: str, where: str = "1=1") -> int:
    floor = floor_for(backend)
    (n,) = floor.execute(f"SELECT COUNT(*) FROM batchq_job WHERE {where}")[0]
    floor.close()
    return int(n)


# -- processes -------------------------------------------------------------------------


def run_procs(cmds: Sequence[Sequence[str]], env: dict[str, str], timeout: float = 600) -> float:
    """Start every command at once, wait for all; wall seconds from first spawn to last exit."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen(list(c), env=env, cwd=REPO_DIR) for c in cmds]
    deadline = t0 + timeout
    for p in procs:
        try:
            rc = p.wait(timeout=max(1.0, deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        if rc != 0:
            raise RuntimeError(f"{c_str(p.args)} exited {rc}")
    return time.perf_counter() - t0


def c_str(args: Any) -> str:
    return " ".join(str(a) for a in args)


# -- statistics and tables ---------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


def med_range(values: Sequence[float], fmt: str = "{:,.0f}") -> str:
    if not values:
        return "n/a"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b and b == b and a == a else "n/a"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def emit(title: str, text: str, name: str | None = None) -> None:
    """Print a result block; also save it under bench/results/ when a name is given."""
    block = f"### {title}\n\n{text}\n"
    print(block, flush=True)
    if name:
        RESULTS_DIR.mkdir(exist_ok=True)
        (RESULTS_DIR / f"{name}.md").write_text(block)


def command_line() -> str:
    argv = [os.path.relpath(sys.executable, REPO_DIR)] + [
        os.path.relpath(a, REPO_DIR) if a.endswith(".py") and os.path.exists(a) else a for a in sys.argv
    ]
    return "`" + " ".join(argv) + "`"


# -- environment description ---------------------------------------------------------------


def server_info(backend: str) -> dict[str, str]:
    floor = floor_for(backend)
    if backend == "mysql":
        names = [
            "version",
            "innodb_flush_log_at_trx_commit",
            "sync_binlog",
            "log_bin",
            "innodb_doublewrite",
            "innodb_flush_method",
            "innodb_buffer_pool_size",
            "innodb_log_file_size",
            "global.tx_isolation",
        ]
        values = floor.execute("SELECT " + ", ".join(f"@@{n}" for n in names))[0]
        info = dict(zip(names, (str(v) for v in values)))
        info["session isolation (batchq and floor)"] = "READ-COMMITTED"
    elif backend == "postgresql":
        names = [
            "server_version",
            "fsync",
            "synchronous_commit",
            "wal_level",
            "shared_buffers",
            "default_transaction_isolation",
            "full_page_writes",
        ]
        values = floor.execute("SELECT " + ", ".join(f"current_setting('{n}')" for n in names))[0]
        info = dict(zip(names, (str(v) for v in values)))
    else:
        info = {
            "sqlite version": sqlite3.sqlite_version,
            "journal_mode": str(floor.execute("PRAGMA journal_mode")[0][0]),
            "synchronous": str(floor.execute("PRAGMA synchronous")[0][0]) + " (0 OFF, 1 NORMAL, 2 FULL)",
            "file": floor.url.database,
        }
    floor.close()
    return info


def machine_info() -> dict[str, str]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        mem_gib = f"{int(mem) / 1024**2:.1f} GiB"
    except OSError:
        mem_gib = "?"
    return {
        "cpu": f"{cpu} x {os.cpu_count()}",
        "memory": mem_gib,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "pymysql": _version_of("pymysql"),
        "psycopg": _version_of("psycopg"),
    }


def _version_of(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"
