"""PostgreSQL through psycopg 3: SKIP LOCKED claims, advisory-lock liveness, LISTEN/NOTIFY wake-up."""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..core.config import DEFAULT_PORTS, DatabaseURL, driver_options
from ..errors import BackendError, BackendUnavailable, ConfigError, SchemaMissing

try:
    import psycopg
    from psycopg import pq
    from psycopg.rows import tuple_row
    from psycopg.types.datetime import TimestamptzLoader
except ImportError as exc:  # an optional extra
    raise ConfigError("a postgresql:// URL needs psycopg: pip install 'batchq[postgresql]'") from exc

from .base import Backend
from .errors import DuplicateKey, TransientError
from .liveness import Liveness

log = logging.getLogger("batchq.backend")

MIN_SERVER_VERSION = 120000
# bytea holds up to 1 GiB, but a payload is held whole in the memory of the app, the server
# backend and the worker (and hex-escaped when sent as text): 64 MiB keeps that sane.
PAYLOAD_LIMIT = 64 * 1024 * 1024
# A waiting worker looks at its stop event this often, so SIGTERM is noticed within this time.
STOP_CHECK_SECONDS = 0.05
_TRANSIENT = {"40001", "40P01", "55P03"}  # serialization failure, deadlock, lock not available
# A write refused by a read-only server: after a failover, the old primary come back as a standby
# (or a standby a connection settled on): a reconnect finds the primary (target_session_attrs).
_READ_ONLY = "25006"
_UNIQUE_VIOLATION = "23505"
# Connection exceptions, shutdown/termination, too many clients, a session closed by
# idle_in_transaction_session_timeout; and refused credentials or an unknown database.
_UNAVAILABLE_PREFIXES = ("08", "57P", "53300", "25P03")
_ACCESS_PREFIXES = ("28", "3D")
# A login the server refuses while connecting (28P01, 28000, 3D000) reaches psycopg with no
# SQLSTATE (libpq gives only the text): told apart by the server's (English) FATAL message.
_REFUSED_AT_CONNECT = re.compile(
    r"FATAL:\s+(password authentication failed|\w+ authentication failed|no pg_hba\.conf entry"
    r"|role \".*\" does not exist|database \".*\" does not exist|permission denied for database)"
)
# Run once on every new connection, in this order (bench/'s raw-driver floors run them too).
SESSION_QUERIES = ("session_setup",)
# A worker vacuums the job table itself once VACUUM_DEAD_ROWS rows are dead (two per job: the
# claimed version and the deleted one) plus a tenth of the live ones (a vacuum scans every index
# whole: a long backlog makes it dear), at most once per VACUUM_INTERVAL_SECONDS across all
# workers: the claim index's dead entries lie in front of every claim (bench/steady_state.py).
VACUUM_DEAD_ROWS = 10_000
VACUUM_LIVE_FRACTION = 0.1
VACUUM_INTERVAL_SECONDS = 1.0


class PostgreSQLBackend(Backend):
    dialect = "postgresql"
    single_statement_claims = True

    server_version = 0
    _listening_on: Any = None  # the connection that has run LISTEN (a reconnect forgets it)
    _listens: frozenset[str] = frozenset()  # the LISTEN queries run on it (jobs, messages)

    def __init__(self, url: DatabaseURL) -> None:
        # Behind PgBouncer in transaction mode, each transaction may run on another server
        # session: nothing may rest on the session (its locks, LISTEN, SET, prepared statements).
        self.pooled = url.options.get("pgbouncer") == "transaction"
        super().__init__(url)

    def _liveness(self) -> Liveness:
        return self._session_or_lease(lambda worker: {"key": liveness_key(worker)})

    def _connect(self) -> Any:
        url = self.url
        params: dict[str, Any] = {
            "connect_timeout": "10",
            "application_name": "batchq",
            **driver_options(url),
        }
        if self.pooled:
            params["prepare_threshold"] = None  # a prepared statement lives in one server session
        conn = self._open(  # a failure is translated (and redacted) by errors()
            host=",".join(host for host, _ in url.hosts),  # libpq tries them in turn
            port=",".join(str(port or DEFAULT_PORTS["postgresql"]) for _, port in url.hosts),
            user=url.user or None,
            password=url.password or None,  # else libpq's PGPASSWORD / ~/.pgpass
            dbname=url.database,
            autocommit=True,  # no transaction left open between statements: never a stale snapshot
            row_factory=tuple_row,
            **params,
        )
        self.server_version = conn.info.server_version
        if self.server_version < MIN_SERVER_VERSION:
            conn.close()
            version = _version(self.server_version)
            raise ConfigError(f"PostgreSQL {version} is too old: batchq needs 12 or later")
        # UTC. Through PgBouncer too: it tracks TimeZone (a reported parameter) per client and
        # sets it on whichever server session the client's next transaction gets.
        for name in SESSION_QUERIES:
            conn.execute(self.sql(name))
        conn.adapters.register_loader("timestamptz", _LenientTimestamptzLoader)
        if "pgbouncer" not in url.options:
            self._refuse_unnamed_pooler(conn)
        return conn

    def _open(self, **arguments: Any) -> Any:
        """The driver's connect (batchq.aio opens an asyncio driver's connection instead)."""
        return psycopg.connect(**arguments)

    def _refuse_unnamed_pooler(self, conn: Any) -> None:
        """Refuse a connection pooler the URL does not name: its sessions are not the server's.

        A pooler answers the client with a cancel key of its own, so the process id libpq was
        given differs from the server session's pg_backend_pid(); a direct connection's match.
        In transaction mode a session lock or a prepared statement would stay on a server
        session that other clients then use: named, batchq does without them.
        """
        server_pid = conn.execute(self.sql("session_backend")).fetchone()[0]
        if server_pid != conn.info.backend_pid:
            conn.close()
            raise ConfigError(
                f"a connection pooler (PgBouncer?) answers at {self.url}: add ?pgbouncer=transaction "
                "to the URL if it pools by transaction (batchq then keeps no session state: lease "
                "liveness, polling, no prepared statements), or ?pgbouncer=session if it pools by session"
            )

    def _translate(self, exc: Exception) -> BackendError | None:
        if not isinstance(exc, psycopg.Error):
            return None
        code = exc.sqlstate or ""
        message = _message(exc)
        if code == "42P01":
            return self._schema_error(
                SchemaMissing(f"batchq tables are missing in {self.url}: run `batchq init-db`")
            )
        if code == "42703":  # an undefined column
            return self._schema_error(BackendError(f"PostgreSQL error {code}: {message}"))
        if code in _TRANSIENT:
            return TransientError(f"PostgreSQL error {code}: {message}")
        if code == _READ_ONLY:
            return BackendUnavailable(f"{self.url} is read-only now (a standby): {message}")
        if code == _UNIQUE_VIOLATION:
            return DuplicateKey(f"PostgreSQL error {code}: {message}")
        if code.startswith(_ACCESS_PREFIXES) or (not code and _REFUSED_AT_CONNECT.search(message)):
            return BackendUnavailable(f"cannot use {self.url}: {message}")
        lost = self._conn is not None and self._conn.closed
        if (
            code.startswith(_UNAVAILABLE_PREFIXES)
            or lost
            or (isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) and not code)
        ):
            return BackendUnavailable(f"cannot reach {self.url}: {message or 'connection closed'}")
        return BackendError(f"PostgreSQL error {code}: {message}")

    def _new_cursor(self, conn: Any = None) -> Any:
        # Tuples whatever row factory the application gave its own connection.
        return (conn if conn is not None else self.conn).cursor(row_factory=tuple_row)

    def _inserted_id(self, cur: Any) -> int:
        return int(cur.fetchone()[0])  # enqueue ends with RETURNING id

    def _begin(self) -> None:
        self.conn.execute("BEGIN")  # an autocommit connection: commit()/rollback() end it

    def transaction_ended(self) -> bool:
        conn = self._conn
        return conn is None or conn.info.transaction_status == pq.TransactionStatus.IDLE

    def reset_after_error(self) -> None:
        conn = self._conn
        if conn is not None and conn.info.transaction_status == pq.TransactionStatus.INERROR:
            conn.rollback()

    def vacuum_if_due(self, dead_rows: int | None = None, interval: float | None = None) -> bool:
        """VACUUM the job table when ``dead_rows`` rows (VACUUM_DEAD_ROWS) and a tenth of the
        live ones are dead, nobody vacuumed it in the last ``interval`` seconds
        (VACUUM_INTERVAL_SECONDS) and no other worker is at it (an advisory lock); between jobs,
        never in a transaction. True if this worker vacuumed.

        Not through PgBouncer in transaction mode: the session lock would stay on whichever
        server session ran it (autovacuum does the work there)."""
        if self.pooled:
            return False
        params = {
            "dead_rows": VACUUM_DEAD_ROWS if dead_rows is None else dead_rows,
            "live_fraction": VACUUM_LIVE_FRACTION,
            "interval": VACUUM_INTERVAL_SECONDS if interval is None else interval,
        }
        row = self.fetchone("jobs_vacuum_lock", params)
        if not (row and row["locked"]):
            return False
        try:
            self.execute("jobs_vacuum")
        except BackendUnavailable:
            raise
        except BackendError as exc:  # a statement_timeout, say: the jobs must go on regardless
            log.warning("could not vacuum the job table (%s); the next tick tries again", exc)
            return False
        finally:
            self.fetchone("jobs_vacuum_unlock")
        return True

    def describe(self) -> str:
        conn = self.conn  # connect to read the version
        where = ""
        if self.url.more_hosts:  # which server of the list the connection settled on
            where = f" (connected to {conn.info.host}:{conn.info.port})"
        if self.pooled:
            where += " through PgBouncer in transaction mode (polling, no prepared statements)"
        return (
            f"PostgreSQL {_version(self.server_version)} at {self.url}{where}; "
            "claims with UPDATE ... (SELECT ... FOR UPDATE SKIP LOCKED)"
        )

    def payload_limit(self) -> int:
        return PAYLOAD_LIMIT

    # -- waiting for jobs: LISTEN/NOTIFY ------------------------------------------------

    def wait_for_jobs(self, queues: Sequence[str], timeout: float, stop: threading.Event) -> None:
        """Return when a job of ``queues`` is enqueued or put back, ``timeout`` passes or ``stop`` is set."""
        self._wait_for_notes("listen", "batchq_jobs", queues, timeout, stop)

    def wait_for_messages(self, topics: Sequence[str], timeout: float, stop: threading.Event) -> None:
        """Return when a publish to one of ``topics`` commits, ``timeout`` passes or ``stop`` is set."""
        self._wait_for_notes("pubsub_listen_messages", "batchq_messages", topics, timeout, stop)

    def _wait_for_notes(
        self, listen: str, channel: str, names: Sequence[str], timeout: float, stop: threading.Event
    ) -> None:
        conn = self._conn
        try:
            if conn is None or conn.closed or self.pooled:
                # Poll: the next claim reconnects (and re-takes the liveness lock); through
                # PgBouncer in transaction mode, a LISTEN would hold a server session of the pool.
                stop.wait(timeout)
                return
            if self._listening_on is not conn or listen not in self._listens:
                conn.execute(self.sql(listen))
                if self._listening_on is not conn:
                    self._listening_on, self._listens = conn, frozenset()
                self._listens |= {listen}
                return  # a job enqueued before LISTEN sent nothing we could see: claim once more
            wanted = set(names)

            def awaited(notes: list[Any]) -> bool:
                return any(note.channel == channel and note.payload in wanted for note in notes)

            # Notifications that arrived while the worker was busy come first, without waiting.
            if awaited(list(conn.notifies(timeout=0))):
                return
            deadline = time.monotonic() + timeout
            while not stop.is_set() and (remaining := deadline - time.monotonic()) > 0:
                if awaited(list(conn.notifies(timeout=min(remaining, STOP_CHECK_SECONDS), stop_after=1))):
                    return
        except psycopg.Error:
            # Connection lost: not handled here, where a silent reconnect would skip the liveness
            # lock; the next claim fails, and the worker reconnects the proper way.
            return

    @contextmanager
    def result_notes(self) -> Iterator[Callable[[int, float], None]]:
        """LISTEN batchq_results on this thread's connection while a Queue.result waits (not
        through PgBouncer in transaction mode: polling, as elsewhere); UNLISTEN after."""
        if self.pooled:
            yield lambda job_id, seconds: time.sleep(seconds)
            return
        self.execute("results_listen")
        conn = self.conn

        def pause(job_id: int, seconds: float) -> None:
            wanted = str(job_id)
            try:
                for note in conn.notifies(timeout=seconds):
                    if note.channel == "batchq_results" and note.payload == wanted:
                        return
            except psycopg.Error:
                time.sleep(seconds)  # connection lost: the next read reconnects (or says why not)

        try:
            yield pause
        finally:
            try:
                if not conn.closed:
                    self.execute("results_unlisten")
            except BackendError:
                pass  # a lost connection listens no more

    def _drop_notifications(self) -> None:
        """A busy worker drains its backlog: every job notified so far is visible to its next claim."""
        if self._listening_on is self._conn and self._conn is not None:
            try:
                list(self._conn.notifies(timeout=0))
            except psycopg.Error:
                pass  # the next statement reports a lost connection


def liveness_key(worker: str) -> int:
    """The advisory lock key of a worker: the first 64 bits of sha1("batchq:" + worker name).

    The one-bigint form (objsubid 1 in pg_locks) rather than (namespace int4, hash int4): with a
    32-bit hash, two of 1,000 live workers would share a key about once in 10,000 fleets (and a
    dead one could pass for alive); with 64 bits neither workers nor an application's own
    advisory keys collide with it in practice.
    """
    digest = hashlib.sha1(f"batchq:{worker}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _message(exc: Exception) -> str:
    """The driver's message on one line (libpq adds DETAIL/HINT lines and a trailing newline)."""
    return " ".join(str(exc).split())


def _version(number: int) -> str:
    return f"{number // 10000}.{number % 10000}"


class _LenientTimestamptzLoader(TimestamptzLoader):
    """A time Python cannot hold (infinity, before the year 1 or after 9999: written by hand) as
    its text, which readers show as it is (stored_time), rather than failing the whole query."""

    def load(self, data: Any) -> Any:
        try:
            return super().load(data)
        except psycopg.DataError:
            return bytes(data).decode("utf-8", "replace")
