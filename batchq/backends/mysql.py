"""MySQL and MariaDB through PyMySQL: the primary backend."""

from __future__ import annotations

import hashlib
import ssl
import weakref
from collections.abc import Iterable, Sequence
from contextlib import suppress
from typing import Any

import pymysql
import pymysql.connections
import pymysql.cursors
from pymysql.constants import CLIENT, SERVER_STATUS

from ..core.config import DEFAULT_PORTS
from ..errors import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    SchemaMissing,
)
from .base import Backend
from .errors import DuplicateKey, TransientError
from .liveness import Liveness
from .mysql_drivers import driver_of, is_driver_error, is_interface_error
from .mysql_statements import (
    MULTI_ROW_STATEMENT_BYTES,
    PACKET_OVERHEAD,
    VALUES,
    check_statement_size,
    chunks,
    supports_skip_locked,
)

_CONNECTION_LOST = {2003, 2006, 2013, 2055, 1927, 4031}  # 1927/4031: killed / idle-timeout
# Lock wait timeout, deadlock. On Galera, 1213 is also a certification failure at COMMIT (another
# node committed a conflicting write first) or a brute-force abort by a replicated write: the
# transaction was rolled back whole, so it is retried like a deadlock, and counted with them.
_TRANSIENT = {1205, 1213}
# "WSREP has not yet prepared node for application use": a Galera node that is joining, or cut
# off from the cluster's primary component. It may take seconds: reconnect, with backoff.
_WSREP_NOT_READY = 1047
# "Got error ... during COMMIT": on a Galera node, a commit under way when the node lost the
# cluster's primary component ("Not connected to Primary Component"): not replicated, so not
# committed. As 1047: reconnect and retry (every retried statement is fenced by its token).
_WSREP_COMMIT_FAILED = 1180
# On Galera a claim fails certification whenever a claimer on another node took the same head row
# first (SKIP LOCKED sees only this node's locks): with 6 workers over 3 nodes, 8 tries in a row
# failed now and then (measured). Each try costs one round trip and nothing else.
GALERA_TRANSIENT_ATTEMPTS = 60
WSREP_SYNC_READS = 1  # wsrep_sync_wait's bit for SELECT, SHOW and BEGIN
_TLS_FAILED = 2026
_DUPLICATE_KEY = 1062
# Access denied (1045; 1698 when the server has password users at the client's host, as any real
# server does; 1044 for a database), unknown database: all refused alike, naming the URL.
_ACCESS = {1044, 1045, 1698, 1049}
MEDIUMBLOB_BYTES = 16 * 1024 * 1024 - 1  # the payload column's capacity
# Run once on every new connection, in this order (bench/'s raw-driver floors run them too).
SESSION_QUERIES = ("session_setup", "session_isolation")


SSL_MODES = ("disable", "prefer", "require", "verify-ca", "verify-full")


def tls_arguments(options: dict[str, str]) -> dict[str, Any]:
    """PyMySQL's TLS arguments for the URL's ``sslmode`` (libpq's names) and ``sslrootcert``.

    ``prefer`` is PyMySQL's own default: TLS when the server offers it, unverified.
    """
    mode = options.get("sslmode", "prefer")
    if mode not in SSL_MODES:
        raise ConfigError(f"bad sslmode {mode!r} in the database URL: use one of {', '.join(SSL_MODES)}")
    if mode == "disable":
        return {"ssl_disabled": True}
    if mode == "prefer":
        return {}
    cafile = options.get("sslrootcert")
    try:
        context = ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot read sslrootcert {cafile!r}: {exc}; give a PEM CA file") from None
    if mode == "require":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif mode == "verify-ca":
        context.check_hostname = False
    return {"ssl": context}


class _Connection(pymysql.connections.Connection):  # type: ignore[misc]
    """PyMySQL's connection, with one TLS context per process for sslmode=prefer: given no TLS
    option, PyMySQL built a new default context for every connection, loading the system's CA
    store (about 60 ms of CPU, more than the rest of connecting) into a context that verifies
    nothing. Every such context is alike: the first is kept and shared."""

    _prefer_context: ssl.SSLContext | None = None

    def _create_ssl_ctx(self, sslp: Any) -> Any:  # PyMySQL's, absent from its type stubs
        if not (isinstance(sslp, dict) and not sslp):
            return super()._create_ssl_ctx(sslp)  # type: ignore[misc]
        if _Connection._prefer_context is None:
            _Connection._prefer_context = super()._create_ssl_ctx(sslp)  # type: ignore[misc]
        return _Connection._prefer_context


class MySQLBackend(Backend):
    dialect = "mysql"
    has_update_returning = False

    server_version = ""
    galera = False  # a node of a Galera cluster (wsrep on): read at connect
    max_allowed_packet = 16 * 1024 * 1024  # of batchq's own connection, read at connect

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # An application's connection (enqueue(conn=...)) -> (its server thread, its limit).
        self._packets: weakref.WeakKeyDictionary[Any, tuple[Any, int]] = weakref.WeakKeyDictionary()

    def _liveness(self) -> Liveness:
        return self._session_or_lease(liveness_lock_names)

    def _connect(self) -> Any:
        url = self.url
        conn = self._open(
            host=url.host,
            port=url.port or DEFAULT_PORTS["mysql"],
            user=url.user or "root",
            password=url.password,
            database=url.database,
            charset="utf8mb4",
            autocommit=True,  # explicit BEGIN for the short transactions; never a stale snapshot
            # FOUND_ROWS: rowcount = matched rows, so fencing checks are exact. MULTI_STATEMENTS:
            # a claim is one round trip (every value in it is escaped by the driver).
            client_flag=CLIENT.FOUND_ROWS | CLIENT.MULTI_STATEMENTS,
            connect_timeout=int(url.options.get("connect_timeout", 10)),
            **tls_arguments(url.options),
        )
        with conn.cursor() as cur:
            for name in SESSION_QUERIES:  # UTC, strict, READ COMMITTED
                cur.execute(self.sql(name))
            cur.execute(self.sql("server_info"))
            version, packet = cur.fetchone()
            cur.execute(self.sql("galera_info"))
            self.galera = is_galera(dict(cur.fetchall()))
        if self.galera:
            self.transient_attempts = GALERA_TRANSIENT_ATTEMPTS
            self._use_leases_on_galera()
        self.server_version = str(version)
        self.max_allowed_packet = int(packet)
        turned_off = url.options.get("skip_locked") == "off"
        self.skip_locked = supports_skip_locked(self.server_version) and not turned_off
        return conn

    def _open(self, **arguments: Any) -> Any:
        """The driver's connect (batchq.aio opens an asyncio driver's connection instead)."""
        return _Connection(**arguments)

    def _use_leases_on_galera(self) -> None:
        """GET_LOCK is not replicated: a worker's lock on one node is free on the others, where
        a sweep would take the worker for dead. So a Galera node means lease liveness (the
        URL's lease= applies), unless the URL says liveness=session. A worker that already
        holds a session lock (it connected to a plain server first) keeps it."""
        options = self.url.options
        if self.liveness.worker is None and options.get("liveness") != "session":
            self.use_leases()

    def liveness_held(self, params: dict[str, Any]) -> bool:
        """On a Galera node, read causally: a node applies the others' write sets after they
        commit, and one that lags (a state-transfer donor applies nothing while it copies) would
        show a lease renewed on another node as expired, so gc-processing would put back a live
        worker's job. wsrep_sync_wait makes the read wait until this node has applied every
        write set the cluster committed before it began."""
        self.conn  # noqa: B018 - connect to know whether this is a Galera node
        if not self.galera:
            return super().liveness_held(params)
        self.execute("wsrep_sync_wait", {"checks": WSREP_SYNC_READS})
        try:
            return super().liveness_held(params)
        finally:
            with suppress(BackendError):  # a lost connection takes the setting with it
                self.execute("wsrep_sync_wait", {"checks": 0})

    def _translate(self, exc: Exception) -> BackendError | None:
        if not is_driver_error(exc):  # PyMySQL's; or mysqlclient's, on an application's connection
            return None
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        message = exc.args[1] if len(exc.args) > 1 else str(exc)
        if code == 1146:
            return self._schema_error(
                SchemaMissing(f"batchq tables are missing in {self.url}: run `batchq init-db`")
            )
        if code == 1054:  # an unknown column
            return self._schema_error(BackendError(f"MySQL error {code}: {message}"))
        if code in _TRANSIENT:
            return TransientError(f"MySQL error {code}: {message}")
        if code == _DUPLICATE_KEY:
            return DuplicateKey(f"MySQL error {code}: {message}")
        if code == _TLS_FAILED:
            return BackendUnavailable(
                f"cannot use {self.url}: {message}; set sslmode= in the URL to what the server offers"
            )
        if code == _WSREP_NOT_READY or (code == _WSREP_COMMIT_FAILED and self.galera):
            return BackendUnavailable(
                f"the Galera node at {self.url} is not ready ({message}): it is joining the cluster "
                "or cut off from its primary component"
            )
        if code in _ACCESS:
            return BackendUnavailable(f"cannot use {self.url}: {message}")
        if code in _CONNECTION_LOST or is_interface_error(exc):
            return BackendUnavailable(f"cannot reach {self.url}: {message or 'connection closed'}")
        return BackendError(f"MySQL error {code}: {message}")

    # -- statements as they go on the wire ----------------------------------------------
    #
    # PyMySQL sends a statement as text with every value inlined (bytes as X'<hex>': twice their
    # size), and a server that gets more than max_allowed_packet drops the connection: with
    # enqueue(conn=...) the application's transaction would be lost. So statements that carry a
    # payload are built here, measured in the bytes PyMySQL sends, and refused with PayloadError
    # before anything is sent; what is sent is exactly what was measured.

    def _new_cursor(self, conn: Any = None) -> Any:
        # Buffered tuples whatever cursor class the application gave its own connection
        # (DictCursor, SSCursor): batchq reads rows by position and reads them all.
        return driver_of(conn).tuple_cursor(conn if conn is not None else self.conn)

    def insert(self, name: str, params: Any, conn: Any = None) -> int:
        with self.errors(), self._cursor(conn) as cur:
            cur.execute(self._fitting(cur, self.sql(name), params))
            return int(cur.lastrowid)

    def insert_many(self, name: str, rows: Sequence[Any], conn: Any = None) -> int:
        self.count_inserted(name, rows, conn)
        return len(rows)

    def count_inserted(self, name: str, rows: Sequence[Any], conn: Any = None) -> int:
        """Multi-row INSERTs of up to ~1 MiB each. PyMySQL's executemany batches only a VALUES
        list of bare placeholders; ours computes run_at and created_at on the server, so it
        would send one INSERT per row. Every row is measured before the first INSERT is sent."""
        head, row_sql = VALUES.split(self.sql(name), maxsplit=1)
        with self.errors(), self._cursor(conn) as cur:
            prefix = f"{head} VALUES ".encode(cur.connection.encoding)
            values = [self._fitting(cur, row_sql, row, len(prefix)) for row in rows]
            budget = min(MULTI_ROW_STATEMENT_BYTES, self._statement_limit(cur.connection)) - len(prefix)
            return self._send_chunks(prefix, chunks(values, budget), conn)

    def _send_chunks(self, prefix: bytes, chunks: Iterable[list[bytes]], conn: Any) -> int:
        """Send each chunk as one INSERT; how many rows they wrote."""
        written = 0
        with self.errors(), self._cursor(conn) as cur:
            for chunk in chunks:
                written += cur.execute(prefix + b",".join(chunk))
        return written

    def check_statement_sizes(self, name: str, rows: Sequence[Any], conn: Any = None) -> None:
        with self.errors(), self._cursor(conn) as cur:
            for row in rows:
                self._fitting(cur, self.sql(name), row)

    def _fitting(self, cur: Any, sql: str, params: Any, extra: int = 0) -> bytes:
        """The statement as PyMySQL sends it; PayloadError if the server would refuse it."""
        statement = driver_of(cur.connection).statement(cur, sql, params)
        check_statement_size(len(statement) + extra, self._statement_limit(cur.connection))
        return statement

    def _statement_limit(self, conn: Any) -> int:
        """The longest statement ``conn``'s session accepts. An application's connection is asked
        itself (its credentials and server may differ from the URL's), once per session."""
        if conn is self._conn:
            return self.max_allowed_packet - PACKET_OVERHEAD
        driver = driver_of(conn)
        session = driver.session(conn)
        known = self._packets.get(conn)
        if known is None or known[0] != session:  # a reconnected connection is a new session
            with driver.tuple_cursor(conn) as cur:  # a tuple, whatever the app's class
                cur.execute(self.sql("max_allowed_packet"))
                (packet,) = cur.fetchone()
            known = self._packets[conn] = (session, int(packet))
        return known[1] - PACKET_OVERHEAD

    def transaction_ended(self) -> bool:
        """The server's status flags of the last reply say whether a transaction is open."""
        conn = self._conn
        return conn is None or not conn.server_status & SERVER_STATUS.SERVER_STATUS_IN_TRANS

    def _multi(self, name: str, params: Any = None) -> list[tuple[int, list[tuple[Any, ...]]]]:
        """Run a multi-statement query: (row count, rows) of each statement in turn."""
        return self._query(name, params, None, _statement_results)

    def describe(self) -> str:
        self.conn  # noqa: B018 - connect to read the version
        claim = (
            "SELECT ... FOR UPDATE SKIP LOCKED"
            if self.skip_locked
            else (
                f"SELECT ... FOR UPDATE (no SKIP LOCKED {self._why_no_skip_locked()}: row claimers "
                "wait for each other; `batchq run --claim partition` spreads them out)"
            )
        )
        cluster = " (a Galera cluster node: claims checked after commit)" if self.galera else ""
        return f"MySQL/MariaDB {self.server_version}{cluster} at {self.url}; claims with {claim}"

    def _why_no_skip_locked(self) -> str:
        return (
            "by the URL's skip_locked=off" if supports_skip_locked(self.server_version) else "on this server"
        )

    def payload_limit(self) -> int:
        """MEDIUMBLOB's capacity; max_allowed_packet is checked on the statement as sent."""
        return MEDIUMBLOB_BYTES


def _statement_results(cur: Any) -> list[tuple[int, list[tuple[Any, ...]]]]:
    results = []
    while True:
        results.append((int(cur.rowcount), list(cur.fetchall()) if cur.description else []))
        if not cur.nextset():
            return results


def is_galera(variables: dict[str, str]) -> bool:
    """wsrep_on and a provider loaded: a Galera node (MariaDB has the variables without one)."""
    provider = variables.get("wsrep_provider", "none").strip().lower()
    return variables.get("wsrep_on", "OFF").upper() == "ON" and provider not in ("", "none")


def liveness_lock_names(worker: str) -> dict[str, str]:
    """A worker's lock name and its handover lock's (GET_LOCK names are limited to 64 characters)."""
    if len(worker) > 64 - len("batchq:"):
        worker = hashlib.sha1(worker.encode()).hexdigest()
    return {"name": f"batchq:{worker}", "handover": f"batchq>{worker}"}
