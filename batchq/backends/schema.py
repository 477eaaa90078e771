"""The batchq tables: which migration a database is at, and bringing it up to date."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from ..errors import BackendError, ConfigError
from .base import Backend
from .sqlfiles import migrations

MIGRATION_LOCK_WAIT_SECONDS = 60  # as in MySQL's migration_lock (PostgreSQL waits for its turn)


def schema_version(backend: Backend) -> int:
    """The last migration applied; 0 when there are no batchq tables."""
    try:
        row = backend.fetchone("schema_version")
    except BackendError:
        backend.reset_after_error()
        return 0
    return int(row["version"]) if row and row["version"] is not None else 0


def migrate(backend: Backend) -> list[str]:
    """Apply pending migrations; return the names applied. Idempotent, and safe when several
    processes run it at once on one database: one migrates while the others wait for it, then
    find nothing to do (concurrent CREATEs on PostgreSQL could fail with 23505)."""
    with _one_migration_at_a_time(backend):
        current = schema_version(backend)
        applied = []
        for version, name, statements in migrations(backend.dialect):
            if version <= current:
                continue
            backend.run_script(statements)
            backend.execute("schema_version_set", {"version": version})
            applied.append(name)
    return applied


def _one_migration_at_a_time(backend: Backend) -> AbstractContextManager[None]:
    """A server: a named lock of the session (migration_lock). SQLite: the whole migration in
    one BEGIN IMMEDIATE transaction: concurrent init-db wait on the write lock, and a migration
    that fails leaves nothing half done."""
    return _migration_lock(backend) if backend.has_sessions else backend.transaction()


@contextmanager
def _migration_lock(backend: Backend) -> Iterator[None]:
    """A lock on this database's migrations for the session (MySQL GET_LOCK, PostgreSQL
    advisory lock), released after, or by the server if the session dies."""
    if backend.pooled:  # the session lock would stay on a pooled server session
        raise ConfigError(
            f"batchq init-db cannot migrate through PgBouncer in transaction mode ({backend.url}): "
            "run it with a URL straight to the PostgreSQL server (workers and apps may use PgBouncer)"
        )
    params = {"name": migration_lock_name(backend.url.database)}
    row = backend.fetchone("migration_lock", params)
    if not row or not row["acquired"]:
        raise BackendError(
            f"another batchq init-db has been migrating {backend.url} for over "
            f"{MIGRATION_LOCK_WAIT_SECONDS}s: try again once it is done"
        )
    try:
        yield
    finally:
        try:
            backend.fetchone("migration_unlock", params)
        except BackendError:
            pass  # a lost session has released it already


def migration_lock_name(database: str) -> str:
    """The migration lock of one database (MySQL's named locks are server-wide: at most 64
    characters)."""
    name = f"batchq:migrate:{database}"
    return name if len(name) <= 64 else "batchq:migrate:" + hashlib.sha1(database.encode()).hexdigest()
