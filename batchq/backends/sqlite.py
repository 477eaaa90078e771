"""SQLite: the embedded default, for one host."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ..errors import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    SchemaMissing,
)
from .base import Backend
from .errors import DuplicateKey, NotUTF8, TransientError
from .liveness import Liveness, ProcessLiveness

MIN_VERSION = (3, 35, 0)  # UPDATE ... RETURNING
# Run once on every new connection, in this order (bench/'s raw-driver floors run them too).
SESSION_QUERIES = ("session_setup", "session_foreign_keys")
# How sqlite3 says that text it was to decode (text_factory str) is not UTF-8.
_NOT_UTF8 = "Could not decode to UTF-8"


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
        # the sweep that reads it. Payloads are read as BLOBs (CAST in the claim). The claim
        # decodes strictly, in C, and only falls back to this (strict_rows).
        conn.text_factory = _lenient_text
        for name in SESSION_QUERIES:  # WAL, foreign keys
            conn.execute(self.sql(name))
        return conn

    def _open(self, path: str, **arguments: Any) -> Any:
        """The driver's connect (batchq.aio opens an asyncio driver's connection instead)."""
        return sqlite3.connect(path, **arguments)

    def strict_rows(self, name: str, params: Any = None) -> list[tuple[Any, ...]]:
        """rows(), text decoded by the driver itself rather than by _lenient_text, a Python call
        per value; NotUTF8 if a value is not UTF-8. Only where the caller can roll back and read
        again leniently: the job claim, whose batches are most of what a worker reads."""
        with self.session_lock:  # no other thread reads on the connection meanwhile
            conn = self.conn
            conn.text_factory = str  # the driver's own decoding
            try:
                return self.rows(name, params)
            finally:
                conn.text_factory = _lenient_text

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
        if message.startswith(_NOT_UTF8):
            return NotUTF8(f"SQLite: {message}")
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

    def _adapt(self, params: Any) -> Any:
        """Lists (of ids) as JSON arrays, read back by json_each(): SQLite binds no lists."""
        if isinstance(params, dict) and any(isinstance(value, list) for value in params.values()):
            return {k: json.dumps(v) if isinstance(v, list) else v for k, v in params.items()}
        return params

    def describe(self) -> str:
        claim = "BEGIN IMMEDIATE + UPDATE ... RETURNING"
        return f"SQLite {sqlite3.sqlite_version} at {self.url}; claims with {claim}"


def _lenient_text(data: bytes) -> str:
    return data.decode("utf-8", "replace")
