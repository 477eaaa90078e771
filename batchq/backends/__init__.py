"""Backends: one per dialect, behind the interface of ``base.Backend``.

``Database`` is what a ``Queue`` or ``MessageQueue`` holds (through ``OnDatabase``): the URL
and one backend (one connection) per thread, opened on first use.
"""

from __future__ import annotations

import threading

from ..core.config import DatabaseURL, parse_url, resolve_url
from ..core.stored import Row, stored_count, stored_seconds, stored_text, stored_time
from .base import Backend
from .errors import DuplicateKey, TransientError
from .liveness import LivenessHeld
from .schema import migrate


class Database:
    """The batchq tables at ``url``: one backend (connection) per thread, opened on first use."""

    def __init__(self, url: str | None = None) -> None:
        self.url: DatabaseURL = parse_url(resolve_url(url))
        self._local = threading.local()
        # False: a missing SQLite file is an error, not created, until init_db (the CLI's choice).
        self.create_missing = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.url)!r})"

    @property
    def backend(self) -> Backend:
        backend = getattr(self._local, "backend", None)
        if backend is None:
            backend = self._local.backend = create_backend(self.url)
            backend.create_missing = self.create_missing
        return backend

    def close(self) -> None:
        """Close this thread's connection (the next use opens a new one)."""
        backend = getattr(self._local, "backend", None)
        if backend is not None:
            backend.close()
            self._local.backend = None

    def init_db(self) -> list[str]:
        """Create or migrate the schema (jobs and messages); returns the migrations applied.

        Retried like any transaction when the database is busy: several init-db at once on a
        new SQLite file can see "database is locked" while another switches it to WAL."""
        self.create_missing = True  # the one command that makes a database
        backend = self.backend
        backend.create_missing = True
        return backend.retrying(lambda: migrate(backend))


class OnDatabase:
    """What Queue and MessageQueue share: the database they hold, and this thread's connection
    to it."""

    def __init__(self, url: str | None = None) -> None:
        self.database = Database(url)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.url)!r})"

    @property
    def url(self) -> DatabaseURL:
        return self.database.url

    @property
    def backend(self) -> Backend:
        """This thread's connection to the database, opened on first use."""
        return self.database.backend

    def init_db(self) -> list[str]:
        """Create or migrate the schema (jobs and messages); returns the migrations applied."""
        return self.database.init_db()

    def close(self) -> None:
        """Close this thread's connection (the next call opens a new one)."""
        self.database.close()


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


__all__ = [
    "Backend",
    "Database",
    "DuplicateKey",
    "OnDatabase",
    "LivenessHeld",
    "Row",
    "TransientError",
    "create_backend",
    "stored_count",
    "stored_seconds",
    "stored_text",
    "stored_time",
]
