"""SQLite: the embedded default, for one host."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import BackendError, BackendUnavailable, ConfigError, SchemaMissing
from ..job import Claim, Job, Kept, kept_document
from .base import Backend, DuplicateKey, TransientError, done_params
from .liveness import Liveness, ProcessLiveness

MIN_VERSION = (3, 35, 0)  # UPDATE ... RETURNING
# enqueue_many's rows per INSERT: 100 rows per statement already take most of the per-statement
# cost away; more only makes the statement (compiled once per size, cached by sqlite3) bigger.
ROWS_PER_INSERT = 500
# SQLITE_MAX_VARIABLE_NUMBER's default: 32766 since 3.32, 999 before (getlimit() needs Python 3.11).
DEFAULT_MAX_VARIABLES = 32766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999
_VALUES = re.compile(r"\s+VALUES\s+", re.IGNORECASE)
_NAMED = re.compile(r":([A-Za-z_]\w*)")
# Run once on every new connection, in this order (bench/'s raw-driver floors run them too).
SESSION_QUERIES = ("session_setup", "session_foreign_keys")


def _make_parent(path: str, url: object) -> None:
    """The database file's folder, made if missing; a path through a file is one line, not a traceback."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise BackendUnavailable(f"cannot open {url}: a part of its folder is not a directory") from None
    except OSError as exc:
        raise BackendUnavailable(f"cannot open {url}: cannot make its folder ({exc.strerror})") from None


class SQLiteBackend(Backend):
    dialect = "sqlite"
    has_sessions = False

    def _liveness(self) -> Liveness:
        return ProcessLiveness(self)

    def _connect(self) -> Any:
        if sqlite3.sqlite_version_info < MIN_VERSION:
            raise ConfigError(f"SQLite {sqlite3.sqlite_version} is too old: batchq needs 3.35 or later")
        path = self.url.database
        if path != ":memory:":
            if not self.create_missing and not Path(path).exists():
                raise SchemaMissing(
                    f"cannot open {self.url}: the file {Path(path).absolute()} does not exist "
                    "(only `batchq init-db` creates it): check the path, or run `batchq init-db`"
                )
            _make_parent(path, self.url)
        # isolation_level=None: autocommit; transactions are explicit BEGIN IMMEDIATE.
        conn = self._open(path, timeout=30, isolation_level=None, check_same_thread=False)
        # SQLite stores any bytes in a TEXT column: a row written by hand that is not UTF-8 must
        # read as text with U+FFFD (its job then fails with the reason), never fail the claim or
        # the sweep that reads it. Payloads are read as BLOBs (CAST in the claim).
        conn.text_factory = _lenient_text
        for name in SESSION_QUERIES:  # WAL, foreign keys
            conn.execute(self.sql(name))
        return conn

    def _open(self, path: str, **arguments: Any) -> Any:
        """The driver's connect (batchq.aio opens an asyncio driver's connection instead)."""
        return sqlite3.connect(path, **arguments)

    def _new_cursor(self, conn: Any = None) -> Any:
        cur = (conn if conn is not None else self.conn).cursor()
        # Tuples whatever row factory the application gave its own connection (sqlite3.Row, a
        # dict factory): a cursor inherits its connection's.
        cur.row_factory = None
        return cur

    def _translate(self, exc: Exception) -> BackendError | None:
        if not isinstance(exc, sqlite3.Error):
            return None
        message = str(exc)
        if "no such table" in message:
            return self._schema_error(
                SchemaMissing(f"batchq tables are missing in {self.url}: run `batchq init-db`")
            )
        if "no such column" in message or "has no column named" in message:
            return self._schema_error(BackendError(f"SQLite: {message}"))
        if isinstance(exc, sqlite3.IntegrityError) and message.startswith("UNIQUE constraint failed"):
            return DuplicateKey(f"SQLite: {message}")
        if "locked" in message or "busy" in message:
            return TransientError(f"SQLite: {message}")
        if "unable to open" in message or "disk I/O" in message:
            return BackendUnavailable(f"cannot open {self.url}: {message}")
        return BackendError(f"SQLite: {message}")

    def _begin(self) -> None:
        # Take the write lock up front: a deferred transaction that later writes can
        # fail with SQLITE_BUSY_SNAPSHOT in WAL mode without waiting.
        self.conn.execute("BEGIN IMMEDIATE")

    def transaction_ended(self) -> bool:
        return self._conn is None or not self._conn.in_transaction

    def claim(
        self,
        queue: str,
        worker: str,
        token: str,
        limit: int = 1,
        done: Sequence[Job] = (),
        partition: int | None = None,
        kept: Sequence[Kept] | None = None,
    ) -> Claim:
        """BEGIN IMMEDIATE; jobs_keep (what is done and kept); jobs_delete (what is done);
        jobs_claim (UPDATE ... RETURNING); COMMIT."""
        params = {"queue": queue, "limit": limit, "worker": worker, "token": token, "partition": partition}
        with self.transaction():
            deleted = self.delete_jobs(done, kept) if done else 0
            rows = self.rows("jobs_claim" if partition is None else "jobs_claim_partition", params)
        if len(rows) > 1:
            rows.sort(key=_claim_order)  # RETURNING gives no order
        return Claim(deleted, [Job.from_row(row, token) for row in rows])

    def _delete_keeping(self, jobs: Sequence[Job], kept: Sequence[Kept]) -> int:
        """jobs_keep, then jobs_delete, in one transaction (the claim's, when one follows)."""
        with self.transaction():
            self.execute("jobs_keep", {**done_params(jobs), "kept": kept_document(kept)})
            return self.delete_jobs(jobs)

    def _adapt(self, params: Any) -> Any:
        """Lists (of ids) as JSON arrays, read back by json_each(): SQLite binds no lists."""
        if isinstance(params, dict) and any(isinstance(value, list) for value in params.values()):
            return {k: json.dumps(v) if isinstance(v, list) else v for k, v in params.items()}
        return params

    def insert_jobs(
        self, template: dict[str, Any], payloads: Sequence[bytes | None], conn: Any = None
    ) -> int:
        """enqueue_many as multi-row INSERTs (executemany would send one INSERT per row): the
        enqueue statement's VALUES row once per payload, each with its own payload parameter, as
        many rows per statement as SQLite's limit on host parameters allows. One statement is
        atomic by itself; more run in one transaction (on ``conn``: the caller's)."""
        per_insert = self._rows_per_insert(conn)
        if conn is None and len(payloads) > per_insert:
            with self.transaction():
                return self._insert_chunks(template, payloads, per_insert, None)
        return self._insert_chunks(template, payloads, per_insert, conn)

    def _insert_chunks(
        self, template: dict[str, Any], payloads: Sequence[bytes | None], per_insert: int, conn: Any
    ) -> int:
        enqueue = self.sql("enqueue")
        with self.errors(), self._cursor(conn) as cur:
            for start in range(0, len(payloads), per_insert):
                chunk = payloads[start : start + per_insert]
                params = {**template, **{f"p{n}": data for n, data in enumerate(chunk)}}
                cur.execute(_multi_row_insert(enqueue, len(chunk)), params)
        return len(payloads)

    def _rows_per_insert(self, conn: Any) -> int:
        """Rows per INSERT within the connection's limit on host parameters (the template's
        parameters count once each, whatever the number of rows)."""
        connection = conn if conn is not None else self.conn
        which = getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", None)  # Python 3.11+
        limit = DEFAULT_MAX_VARIABLES if which is None else connection.getlimit(which)
        shared = len(set(_NAMED.findall(self.sql("enqueue"))) - {"payload"})
        return max(1, min(ROWS_PER_INSERT, limit - shared))

    def describe(self) -> str:
        claim = "BEGIN IMMEDIATE + UPDATE ... RETURNING"
        return f"SQLite {sqlite3.sqlite_version} at {self.url}; claims with {claim}"


@lru_cache(maxsize=32)  # one per batch size in use; sqlite3 caches each compiled
def _multi_row_insert(enqueue: str, rows: int) -> str:
    """The enqueue statement with ``rows`` VALUES rows, payload n bound as :p<n>."""
    head, row_sql = _VALUES.split(enqueue.strip().rstrip(";"), maxsplit=1)
    values = ",".join(row_sql.replace(":payload", f":p{n}") for n in range(rows))
    return f"{head} VALUES {values}"


def _claim_order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """The claim index's order (priority DESC, run_at, id) for a batch, whatever a row written by
    hand holds: SQLite sorts text priorities above every number."""
    priority, run_at, job_id = row[5], row[11], row[0]
    if isinstance(priority, (int, float)):
        return (1, -priority, str(run_at), job_id)
    return (0, str(priority), str(run_at), job_id)


def _lenient_text(data: bytes) -> str:
    return data.decode("utf-8", "replace")
