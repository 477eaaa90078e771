"""The narrow interface every dialect implements, and the URL -> backend factory.

A backend runs named queries from ``sql/<dialect>/queries.sql`` on one
connection: nothing, one row or all rows, in autocommit or inside
``transaction()``. Dialect modules only connect, claim, check liveness and
translate driver errors.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, NoReturn, TypeVar

from ..config import DatabaseURL, parse_url, redact, resolve_url
from ..errors import BackendError, BackendUnavailable
from ..job import Claim, Job
from ..sqlfiles import migrations as load_migrations
from ..sqlfiles import queries as load_queries

Row = dict[str, Any]
T = TypeVar("T")

log = logging.getLogger("batchq.backend")

# After ending its own ghost session, how long a worker waits for the server to free its lock.
GHOST_END_WAIT_SECONDS = 5.0


MIGRATION_LOCK_WAIT_SECONDS = 60  # as in MySQL's migration_lock (PostgreSQL waits for its turn)


class TransientError(BackendError):
    """A deadlock, lock wait timeout or serialization failure: safe to retry the transaction."""


class LivenessHeld(BackendUnavailable):
    """Another session holds this worker's liveness lock (its old session has not ended yet)."""


class Backend(ABC):
    dialect: ClassVar[str]
    skip_locked: bool = True
    has_sessions: ClassVar[bool] = True  # a server session that can idle out, be lost or linger

    def __init__(self, url: DatabaseURL) -> None:
        self.url = url
        self.queries = load_queries(self.dialect)
        self._conn: Any = None
        self._liveness_name: str | None = None  # set by hold_liveness: re-taken on every connect
        self._own_sessions: set[int] = set()  # server sessions that have held our liveness lock
        self.transient_retries = 0  # deadlocks and lock waits retried, for reports
        self._in_transaction = False
        # One user of the connection at a time: the worker's thread, or its heartbeat.
        self.session_lock = threading.RLock()

    # -- connection ---------------------------------------------------------

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
            if self._liveness_name is not None:
                try:
                    self._keep_session_open()
                    self._take_liveness(self._liveness_name)
                except BaseException:
                    self._drop_connection()
                    raise
        return self._conn

    def close(self) -> None:
        self._drop_connection()

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

    def insert_jobs(self, rows: Sequence[dict[str, Any]], conn: Any = None) -> int:
        """enqueue_many: rows that differ only in their payload, all or none, in as few
        statements as the dialect allows; on ``conn``, inside the caller's transaction."""
        if conn is not None:
            return self.insert_many("enqueue", rows, conn)
        with self.transaction():
            return self.insert_many("enqueue", rows)

    def insert_many(self, name: str, rows: Sequence[Any], conn: Any = None) -> int:
        with self.errors(), self._cursor(conn) as cur:
            cur.executemany(self.sql(name), rows)
            return len(rows)

    def fetchone(self, name: str, params: Any = None) -> Row | None:
        return self._query(name, params, None, self._first_row)

    def fetchall(self, name: str, params: Any = None) -> list[Row]:
        return self._query(name, params, None, self._all_rows)

    def rows(self, name: str, params: Any = None) -> list[tuple[Any, ...]]:
        """All rows as tuples: the job cycle's reads, without a dict per row."""
        return self._query(name, params, None, _tuples)

    def _query(self, name: str, params: Any, conn: Any, read: Callable[[Any], T]) -> T:
        """Run a named statement on a fresh cursor and ``read`` its result.

        errors() and _cursor() spelled out: every statement of a job cycle comes through here,
        and their generator context managers cost a SQLite worker about a tenth of its CPU.
        """
        with self.session_lock:
            try:
                cur = self._new_cursor(conn)
                try:
                    cur.execute(self.queries[name], self._adapt(params) or ())
                    return read(cur)
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

    def retrying(self, action: Callable[[], T], attempts: int = 8) -> T:
        """Run a transaction, retrying deadlocks and lock waits with jittered backoff."""
        if self._in_transaction:
            return action()  # a deadlock ends the whole outer transaction: only it can be retried
        for attempt in range(attempts):
            try:
                return action()
            except TransientError:
                if attempt == attempts - 1:
                    raise
                self.transient_retries += 1
                time.sleep(random.uniform(0, 0.005 * 2**attempt))
        raise AssertionError("unreachable")

    # -- the dialect-specific parts ---------------------------------------------

    # -- the job cycle ------------------------------------------------------------

    @abstractmethod
    def claim(self, queue: str, worker: str, token: str, limit: int = 1, done: Sequence[Job] = ()) -> Claim:
        """In one transaction: delete the jobs ``done`` (finished by this worker, fenced by their
        claim's token) and claim up to ``limit`` due jobs of ``queue``, in the claim index's
        order (priority, then due time, then id), marked ours with ``token``.

        Every 'ready' row is due (jobs_promote moves 'scheduled' ones once their time comes), so
        a claim takes the first unlocked rows of the claim index: it never walks the backlog.
        """

    def delete_jobs(self, jobs: Sequence[Job]) -> int:
        """Delete finished jobs when no claim follows; returns how many matched their token."""
        return self.execute("jobs_delete", {"token": jobs[0].claim_token, "ids": job_ids(jobs)})

    def release_jobs(self, jobs: Sequence[Job]) -> int:
        """Put back claimed jobs this worker will not run, uncounted."""
        return self.execute("jobs_release", {"token": jobs[0].claim_token, "ids": job_ids(jobs)})

    def promote_due(self) -> int:
        """Make scheduled jobs whose time has come ready; returns how many."""
        return self.execute("jobs_promote")

    def hold_liveness(self, worker: str) -> None:
        """Show this worker alive for as long as its connection lives, on every connection it opens."""
        if self._conn is not None:
            self._keep_session_open()
            self._take_liveness(worker)
            self._liveness_name = worker
            return
        self._liveness_name = worker
        try:
            self.conn  # noqa: B018 - connect now, which takes the lock
        except BaseException:
            self._liveness_name = None
            raise

    def _keep_session_open(self) -> None:
        """Raise the server's idle limit for the worker's session, where the server lets us.

        Only the worker's session: a job may leave it idle for hours. Where a server or proxy
        still cuts idle sessions, the worker's heartbeat (ping) keeps it busy.
        """
        try:
            self.execute("keep_session_open")
        except BackendUnavailable:
            raise
        except BackendError as exc:
            log.info("cannot raise this session's idle limit (%s); the heartbeat keeps it busy", exc)

    def _liveness_params(self, worker: str) -> dict[str, Any]:
        """The parameters naming the worker's lock in the liveness queries."""
        raise NotImplementedError

    def _take_liveness(self, worker: str) -> None:
        """Take the worker's liveness lock on the current connection, or raise LivenessHeld.

        The name is unique to this process, so a session holding it is one this worker opened
        before: lost on our side (a middlebox dropped the connection) but not on the server's,
        a ghost. We end it (MySQL KILL, PostgreSQL pg_terminate_backend) and take the lock.
        """
        if self._try_liveness(worker):
            return
        holder = self.fetchone("liveness_holder", self._liveness_params(worker))
        session = holder["session"] if holder else None
        if session is None:
            if self._try_liveness(worker):  # freed meanwhile
                return
        elif int(session) in self._own_sessions:
            self._end_ghost(worker, int(session))
            return
        raise LivenessHeld(f"worker name {worker!r} is already held by a live session")

    def _try_liveness(self, worker: str) -> bool:
        row = self.fetchone("liveness_lock", self._liveness_params(worker))
        if not row or not row["acquired"]:
            return False
        self._own_sessions.add(int(row["session"]))
        return True

    def _end_ghost(self, worker: str, session: int) -> None:
        """End our own previous session, which still holds the lock, and take the lock."""
        log.warning(
            "worker %s: its previous database session %d still holds its lock; ending it", worker, session
        )
        try:
            self.execute("end_session", {"session": session})
        except BackendUnavailable:
            raise
        except BackendError as exc:
            raise LivenessHeld(
                f"worker name {worker!r} is held by this worker's previous session {session}, "
                f"which could not be ended ({exc}); the server frees it once it notices the "
                "connection is gone"
            ) from None
        params = {**self._liveness_params(worker), "wait": GHOST_END_WAIT_SECONDS}
        try:
            row = self.fetchone("liveness_lock_wait", params)
        except BackendUnavailable:
            raise
        except BackendError:
            row = None  # PostgreSQL: lock_timeout ran out
        if not row or not row["acquired"]:
            raise LivenessHeld(f"worker name {worker!r} is still held by session {session} after ending it")
        self._own_sessions.add(int(row["session"]))

    def end_session(self, session: int) -> bool:
        """End a server session (a ghost holding a worker's lock); False if not permitted."""
        try:
            self.execute("end_session", {"session": session})
        except BackendUnavailable:
            raise
        except BackendError as exc:
            log.info("cannot end session %d: %s", session, exc)
            return False
        return True

    def ping(self) -> None:
        """The heartbeat: keep the worker's session from sitting idle while a job runs.

        Skipped while the worker itself uses the connection. A lost session is re-opened at
        once, which re-takes the liveness lock (ending our ghost session if the server kept it).
        """
        if not self.session_lock.acquire(blocking=False):
            return
        try:
            try:
                self.fetchone("heartbeat")
            except BackendUnavailable as exc:
                log.warning("database connection lost during a job (%s); reconnecting", exc)
                self.fetchone("heartbeat")  # connects and takes the liveness lock again
        except BackendError as exc:
            log.warning("heartbeat failed (%s); retrying at the next beat", exc)
        finally:
            self.session_lock.release()

    @abstractmethod
    def is_alive(self, worker: str) -> bool | None:
        """Is the worker that wrote ``locked_by = worker`` alive? None if this cannot be told."""

    def ghost_session(self, worker: str, idle_after: float) -> tuple[int, float] | None:
        """The session holding the worker's lock, and its idle seconds, if it has sat idle for
        more than ``idle_after`` seconds: a working worker's heartbeat never lets it, so its
        worker is gone and the server has not noticed. None otherwise, or if it cannot be seen."""
        params = {**self._liveness_params(worker), "idle_after": idle_after}
        row = self.fetchone("liveness_ghost", params)
        return (int(row["session"]), float(row["idle_seconds"])) if row else None

    @abstractmethod
    def check_connection(self, conn: Any) -> None:
        """Refuse an application connection of another driver (for enqueue(conn=...))."""

    def wait_for_jobs(self, queues: Sequence[str], timeout: float, stop: threading.Event) -> None:
        """An idle worker's pause: at most ``timeout`` seconds, cut short by ``stop`` (SIGTERM).

        Polling backends just sleep; PostgreSQL also returns when a job of ``queues`` is notified.
        """
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

    # -- schema -----------------------------------------------------------------

    def schema_version(self) -> int:
        try:
            row = self.fetchone("schema_version")
        except BackendError:
            self._reset_after_error()
            return 0
        return int(row["version"]) if row and row["version"] is not None else 0

    def _reset_after_error(self) -> None:
        """Leave a failed statement's transaction state behind (PostgreSQL needs it)."""

    def migrate(self) -> list[str]:
        """Apply pending migrations; return the names applied. Idempotent, and safe when several
        processes run it at once on one database: one migrates while the others wait for it,
        then find nothing to do (concurrent CREATEs on PostgreSQL could fail with 23505)."""
        with self._migration_lock():
            current = self.schema_version()
            applied = []
            for version, name, statements in load_migrations(self.dialect):
                if version <= current:
                    continue
                with self.errors(), self._cursor() as cur:
                    for statement in statements:
                        cur.execute(statement)
                self.execute("schema_version_set", {"version": version})
                applied.append(name)
        return applied

    @contextmanager
    def _migration_lock(self) -> Iterator[None]:
        """A lock on this database's migrations for the session (MySQL GET_LOCK, PostgreSQL
        advisory lock), released after, or by the server if the session dies."""
        params = {"name": migration_lock_name(self.url.database)}
        row = self.fetchone("migration_lock", params)
        if not row or not row["acquired"]:
            raise BackendError(
                f"another batchq init-db has been migrating {self.url} for over "
                f"{MIGRATION_LOCK_WAIT_SECONDS}s: try again once it is done"
            )
        try:
            yield
        finally:
            try:
                self.fetchone("migration_unlock", params)
            except BackendError:
                pass  # a lost session has released it already


class BackendHandle:
    """A handle on the batchq tables at ``url``: one backend (connection) per thread, opened on first use."""

    def __init__(self, url: str | None = None) -> None:
        self.url: DatabaseURL = parse_url(resolve_url(url))
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.url)!r})"

    @property
    def backend(self) -> Backend:
        backend = getattr(self._local, "backend", None)
        if backend is None:
            backend = self._local.backend = create_backend(self.url)
        return backend

    def close(self) -> None:
        backend = getattr(self._local, "backend", None)
        if backend is not None:
            backend.close()
            self._local.backend = None

    def init_db(self) -> list[str]:
        """Create or migrate the schema (jobs and messages); returns the migrations applied.

        Retried like any transaction when the database is busy: several init-db at once on a
        new SQLite file can see "database is locked" while another switches it to WAL."""
        return self.backend.retrying(self.backend.migrate)


def job_ids(jobs: Sequence[Job]) -> list[int]:
    return [job.id for job in jobs]


def done_params(done: Sequence[Job]) -> dict[str, Any]:
    """The finished jobs a claim deletes first: their token and ids (none: matches nothing)."""
    return {"done_token": done[0].claim_token if done else None, "done_ids": job_ids(done)}


def migration_lock_name(database: str) -> str:
    """The migration lock of one database (MySQL's named locks are server-wide: at most 64
    characters)."""
    name = f"batchq:migrate:{database}"
    return name if len(name) <= 64 else "batchq:migrate:" + hashlib.sha1(database.encode()).hexdigest()


def stored_count(value: Any) -> int:
    """A count read from a row as an int, 0 if it is none: SQLite lets a row written by hand
    hold any type in any column, and a worker or sweep must not fail on it."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def create_backend(url: str | DatabaseURL) -> Backend:
    parsed = parse_url(url) if isinstance(url, str) else url
    if parsed.dialect == "sqlite":
        from .sqlite import SQLiteBackend

        return SQLiteBackend(parsed)
    if parsed.dialect == "mysql":
        from .mysql import MySQLBackend

        return MySQLBackend(parsed)
    from .postgresql import PostgreSQLBackend

    return PostgreSQLBackend(parsed)


def _column_names(cur: Any) -> list[str]:
    return [column[0] for column in cur.description]


def _tuples(cur: Any) -> list[tuple[Any, ...]]:
    return list(cur.fetchall())


def _rowcount(cur: Any) -> int:
    return int(cur.rowcount)
