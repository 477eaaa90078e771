"""A connection to one database and the named queries batchq runs on it.

A backend runs named queries from ``sql/<dialect>/*.sql`` on one connection: nothing, one row
or all rows, in autocommit or inside ``transaction()``. Dialect modules connect and translate
driver errors; a worker's liveness is in ``liveness.py``, the schema in ``schema.py``. Each
concern's operations (jobs, locks, schedules, partitions, ...) are typed methods of its store,
``backend.stores.<concern>`` (batchq.stores), which runs its named queries on this connection:
the job cycle's statements (claim, enqueue, delete, release, promote), which each dialect writes
its own way, are the job store's (batchq.stores.jobs).
"""

from __future__ import annotations

import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, NoReturn, TypeVar

from ..core.config import DatabaseURL, lease_length, lease_seconds, redact
from ..core.stored import Row
from ..errors import BackendError, BackendUnavailable, SchemaMissing
from ..stores import Stores
from .appconn import driver_connection
from .errors import TransientError
from .liveness import LeaseLiveness, Liveness
from .sqlfiles import migrations
from .sqlfiles import queries as load_queries

T = TypeVar("T")


TRANSIENT_BACKOFF_MAX = 0.5  # seconds: the longest pause between two tries of a transaction


class Backend(ABC):
    dialect: ClassVar[str]
    skip_locked: bool = True
    has_sessions: ClassVar[bool] = True  # a server session that can idle out, be lost or linger
    # A claim or a message read is one statement, atomic in autocommit (PostgreSQL): no BEGIN
    # and COMMIT around it. SQLite's takes the write lock first; MySQL's locks, then marks.
    single_statement_claims: ClassVar[bool] = False
    # UPDATE/DELETE ... RETURNING; without it (MySQL) a claim selects, then marks what it found.
    has_update_returning: ClassVar[bool] = True
    # Behind a pooler that hands each transaction another server session (PgBouncer in
    # transaction mode): no session locks, LISTEN, SET or prepared statements.
    pooled: bool = False
    # Tries of a transaction that keeps failing transiently (retrying). A Galera node raises it:
    # there every claim on another node races for the same head rows, and loses often.
    transient_attempts: int = 8
    # May connecting create a missing database (an SQLite file and its folders)? Database turns
    # it off for the CLI's commands, so that a mistyped path is not left behind as an empty file.
    create_missing: bool = True

    def __init__(self, url: DatabaseURL) -> None:
        self.url = url
        self.queries = load_queries(self.dialect)
        self._conn: Any = None
        self.liveness = self._liveness()
        self.transient_retries = 0  # deadlocks and lock waits retried, for reports
        self._in_transaction = False
        # One user of the connection at a time: the worker's thread, or its heartbeat.
        self.session_lock = threading.RLock()
        self._probing_schema = False  # a probe of _schema_error's own: it asks nobody further
        self.stores = Stores(self)  # each concern's typed operations on this connection

    # -- connection ---------------------------------------------------------

    @abstractmethod
    def _liveness(self) -> Liveness:
        """How this dialect tells a worker alive."""

    def _session_or_lease(self, lock_params: Callable[[str], dict[str, Any]]) -> Liveness:
        """A server's liveness: the session's lock, or a lease where the URL asks for one."""
        ttl = lease_seconds(self.url)
        return Liveness(self, lock_params) if ttl is None else LeaseLiveness(self, lock_params, ttl)

    def hold_liveness(self, worker: str) -> None:
        """Show ``worker`` alive from now on. Connects first: the connection may find that leases
        are needed (use_leases), which must happen before the worker holds anything."""
        self.conn  # noqa: B018
        self.liveness.hold(worker)

    def use_leases(self) -> None:
        """Switch to lease liveness (of the URL's lease= length), where a session's lock cannot
        be trusted (found on connect: a cluster or a pooler). Before the worker holds its
        liveness, not after."""
        if not isinstance(self.liveness, LeaseLiveness):
            assert self.liveness.worker is None, "switch before hold()"
            self.liveness = LeaseLiveness(self, self.liveness.lock_params, lease_length(self.url))

    def liveness_held(self, params: dict[str, Any]) -> bool:
        """liveness_held: is the worker's lock held or its lease unexpired (see Liveness.is_alive)."""
        row = self.fetchone("liveness_held", params)
        return bool(row and row["held"])

    @abstractmethod
    def _connect(self) -> Any:
        """Open a connection with the session settings batchq relies on."""

    @abstractmethod
    def _translate(self, exc: Exception) -> BackendError | None:
        """Map a driver exception to a batchq error, or None if it is not a driver error."""

    @property
    def conn(self) -> Any:
        """The connection, opened on first use. A worker's connection never exists without its
        liveness lock: a reconnect takes it again before any statement runs."""
        if self._conn is None:
            with self.errors():
                self._conn = self._connect()
            try:
                self.liveness.on_connect()
            except BaseException:
                self._drop_connection()
                raise
        return self._conn

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def close(self) -> None:
        self._drop_connection()

    def aside(self) -> Backend:
        """Another connection to the same database, holding nothing (a lease's heartbeat renews
        on it while the worker's own connection is in a job's transaction)."""
        return type(self)(self.url)

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Re-raise driver errors as batchq errors, without the password in the text."""
        try:
            yield
        except BackendError:
            raise
        except Exception as exc:
            self._raise_translated(exc)

    def _raise_translated(self, exc: Exception) -> NoReturn:
        """Re-raise a driver error as a batchq error without the password; anything else as is."""
        translated = self._translate(exc)
        if translated is None:
            raise exc
        if isinstance(translated, BackendUnavailable):
            self._drop_connection()
        translated.args = (redact(str(translated), self.url),)
        raise translated from None

    def _schema_error(self, fallback: BackendError) -> BackendError:
        """A table or column this code uses is missing: when the schema is behind this code's
        migrations, say so (init-db brings it up); else ``fallback``. Asked on a connection of
        its own: this one may be inside a transaction the error has just spoiled."""
        if self._probing_schema:
            return fallback
        probe = type(self)(self.url)
        probe._probing_schema = True
        try:
            row = probe.fetchone("schema_version")
            version = int(row["version"]) if row and row["version"] is not None else 0
        except BackendError:
            return fallback  # no batchq_schema either: the tables are missing
        finally:
            probe.close()
        latest = max(number for number, _, _ in migrations(self.dialect))
        if 0 < version < latest:
            return SchemaMissing(
                f"the batchq schema of {self.url} is behind: at migration {version} of {latest}; "
                "run `batchq init-db`"
            )
        return fallback

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    # -- named queries --------------------------------------------------------

    def sql(self, name: str) -> str:
        return self.queries[name]

    def execute(self, name: str, params: Any = None, conn: Any = None) -> int:
        """Run a statement; return the affected row count (matched rows on MySQL)."""
        return self._query(name, params, conn, _rowcount)

    def insert(self, name: str, params: Any, conn: Any = None) -> int:
        """Run an INSERT and return the new row's id."""
        return self._query(name, params, conn, self._inserted_id)

    def insert_many(self, name: str, rows: Sequence[Any], conn: Any = None) -> int:
        with self.errors(), self._cursor(conn) as cur:
            cur.executemany(self.sql(name), rows)
            return len(rows)

    def count_inserted(self, name: str, rows: Sequence[Any], conn: Any = None) -> int:
        """Run an INSERT for each row; how many rows it wrote."""
        with self.errors(), self._cursor(conn) as cur:
            cur.executemany(self.sql(name), rows)
            return int(cur.rowcount)

    def fetchone(self, name: str, params: Any = None, conn: Any = None) -> Row | None:
        return self._query(name, params, conn, self._first_row)

    def fetchall(self, name: str, params: Any = None, conn: Any = None) -> list[Row]:
        return self._query(name, params, conn, self._all_rows)

    def rows(self, name: str, params: Any = None) -> list[tuple[Any, ...]]:
        """All rows as tuples: the job cycle's reads, without a dict per row."""
        return self._query(name, params, None, _tuples)

    def _query(self, name: str, params: Any, conn: Any, read: Callable[[Any], T]) -> T:
        """Run a named statement on a fresh cursor and ``read`` its result."""

        def run(cur: Any) -> T:
            cur.execute(self.queries[name], self._adapt(params) or ())
            return read(cur)

        return self._on_cursor(conn, run)

    def _on_cursor(self, conn: Any, use: Callable[[Any], T]) -> T:
        """``use`` a fresh cursor, under the session lock, driver errors translated.

        errors() and _cursor() spelled out: every statement of a job cycle comes through here,
        and their generator context managers cost a SQLite worker about a tenth of its CPU.
        """
        with self.session_lock:
            try:
                cur = self._new_cursor(conn)
                try:
                    return use(cur)
                finally:
                    cur.close()
            except BackendError:
                raise
            except Exception as exc:
                self._raise_translated(exc)

    def _adapt(self, params: Any) -> Any:
        """Parameters as the driver binds them: one shape in Python (seconds as numbers, ids as
        lists), converted here where a driver needs another (SQLite: lists as JSON)."""
        return params

    def _new_cursor(self, conn: Any = None) -> Any:
        return (conn if conn is not None else self.conn).cursor()

    @contextmanager
    def _cursor(self, conn: Any = None) -> Iterator[Any]:
        with self.session_lock:
            cur = self._new_cursor(conn)
            try:
                yield cur
            finally:
                cur.close()

    def _first_row(self, cur: Any) -> Row | None:
        row = cur.fetchone()
        return None if row is None else dict(zip(_column_names(cur), row))

    def _all_rows(self, cur: Any) -> list[Row]:
        names = _column_names(cur)  # once: psycopg builds new Column objects on every access
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def _inserted_id(self, cur: Any) -> int:
        return int(cur.lastrowid)

    # -- transactions ---------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A short explicit transaction; commit on success, roll back on error.

        A transaction opened inside another joins it (the worker acknowledges a job and claims
        the next in one commit); only the outermost one begins and commits.
        """
        if self._in_transaction:
            yield
            return
        self.session_lock.acquire()  # the whole transaction: a heartbeat ping waits for its end
        try:
            with self.errors():
                self._begin()
        except BaseException:
            self.session_lock.release()
            raise
        self._in_transaction = True
        try:
            yield
            with self.errors():
                self._conn.commit()
        except BaseException:
            # Also after a failed COMMIT: never leave a transaction open on the connection.
            self._rollback_quietly()
            raise
        finally:
            self._in_transaction = False
            self.session_lock.release()

    def _rollback_quietly(self) -> None:
        """End whatever transaction a failure left open; a connection that cannot is dropped."""
        if self._conn is not None:
            try:
                self._conn.rollback()
            except Exception:
                self._drop_connection()

    def _begin(self) -> None:
        self.conn.begin()

    def transaction_ended(self) -> bool:
        """Inside transaction(): did something else end it on the connection (a task's own
        COMMIT or ROLLBACK on the job's transaction, or a statement that commits implicitly)?"""
        return False

    def reset_after_error(self) -> None:
        """Leave a failed statement's transaction state behind (PostgreSQL needs it)."""

    def run_script(self, statements: Sequence[str]) -> None:
        """Run a migration's statements in turn (the only SQL not read by name)."""
        with self.errors(), self._cursor() as cur:
            for statement in statements:
                cur.execute(statement)

    def retrying(self, action: Callable[[], T], attempts: int | None = None) -> T:
        """Run a transaction, retrying deadlocks and lock waits with jittered backoff."""
        if self._in_transaction:
            return action()  # a deadlock ends the whole outer transaction: only it can be retried
        attempts = attempts or self.transient_attempts
        for attempt in range(attempts):
            try:
                return action()
            except TransientError:
                if attempt == attempts - 1:
                    raise
                self.transient_retries += 1
                self.sleep(random.uniform(0, min(0.005 * 2**attempt, TRANSIENT_BACKOFF_MAX)))
        raise AssertionError("unreachable")

    def sleep(self, seconds: float) -> None:
        """Wait (between two tries, two polls): batchq.aio's backends give the event loop the time."""
        time.sleep(seconds)

    def vacuum_if_due(self) -> bool:
        """Clean up after the finished jobs where the database leaves that to us (PostgreSQL);
        True if this worker did."""
        return False

    def app_connection(self, conn: Any) -> Any:
        """The driver connection under what the application passed as ``conn=`` (a Django
        connection, an SQLAlchemy Connection or Session, a driver's), refused with ConfigError
        if batchq cannot write on it or it is of another dialect (batchq.backends.appconn)."""
        return driver_connection(conn, self.dialect, self.url)

    @contextmanager
    def result_notes(self) -> Iterator[Callable[[int, float], None]]:
        """For Queue.result(wait=...): a pause(job_id, seconds) between two reads. Polling
        backends sleep; PostgreSQL LISTENs while this is open and wakes when the job's end is
        notified."""
        yield lambda job_id, seconds: time.sleep(seconds)

    def wait_for_jobs(self, queues: Sequence[str], timeout: float, stop: threading.Event) -> None:
        """An idle worker's pause: at most ``timeout`` seconds, cut short by ``stop`` (SIGTERM).

        Polling backends just sleep; PostgreSQL also returns when a job of ``queues`` is notified.
        """
        stop.wait(timeout)

    def wait_for_messages(self, topics: Sequence[str], timeout: float, stop: threading.Event) -> None:
        """An idle consumer's pause (`batchq consume`), as wait_for_jobs: PostgreSQL also returns
        when a message is published to one of ``topics``."""
        stop.wait(timeout)

    def describe(self) -> str:
        """One line for `batchq stats`: server and claim strategy."""
        return f"{self.dialect} {self.url}"

    def payload_limit(self) -> int:
        """The largest payload, in bytes, the table accepts (known without connecting)."""
        return 16 * 1024 * 1024 - 1

    def check_statement_sizes(self, name: str, rows: Sequence[Any], conn: Any = None) -> None:
        """Raise PayloadError, sending nothing, if a row's statement is more than the server
        accepts. Only MySQL needs it: the others bind values apart from the statement, and
        payload_limit() is already under their limits."""


def _column_names(cur: Any) -> list[str]:
    return [column[0] for column in cur.description]


def _tuples(cur: Any) -> list[tuple[Any, ...]]:
    return list(cur.fetchall())


def _rowcount(cur: Any) -> int:
    return int(cur.rowcount)
