"""The database's refusals that batchq handles itself and never hands to a caller: a retried
deadlock, a unique key another job holds. A leaf, for the backends and the stores alike."""

from __future__ import annotations

from ..errors import BackendError


class TransientError(BackendError):
    """A deadlock, lock wait timeout or serialization failure: safe to retry the transaction."""


class DuplicateKey(BackendError):
    """A write would give a job a unique key another waiting or running job holds."""


class NotUTF8(BackendError):
    """SQLite: a text value that is not UTF-8 (a row written by hand), met by a read that let the
    driver decode strictly (SQLiteBackend.strict_rows): read it again leniently."""
