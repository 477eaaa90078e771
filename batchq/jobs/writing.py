"""Writing built job rows (batchq.jobs.jobspec builds them): within the queue's bound
(batchq.policy.bounds), for a unique key, or waiting for parents (batchq.jobs.dependencies).
The one place enqueue, enqueue_on_commit, enqueue_many and chains write through; on ``conn``, in
the caller's transaction, else in transactions of its own, retried on deadlocks."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..backends import Backend, OnDatabase
from ..errors import BackendError
from ..policy.bounds import BOUND_CACHE_SECONDS, make_room, take_turn
from .dependencies import (
    check_parents,
    enqueue_waiting,
    enqueue_waiting_many,
    write_waiting,
    write_waiting_many,
)

T = TypeVar("T")
Row = dict[str, Any]

# An enqueue whose key's job ended between its INSERT and its look-up of the holder inserts
# again; only a key changing hands this many times in a row gives up.
UNIQUE_ATTEMPTS = 10


class JobWriter:
    """Writes job rows into the database of ``db`` (its backend asked at each use: batchq.aio
    replaces a Queue's database). Knows which queues are bounded, re-read once a second."""

    def __init__(self, db: OnDatabase) -> None:
        self.db = db
        self._bounds_known: dict[str, tuple[float, bool]] = {}  # queue: (valid until, bounded)

    @property
    def backend(self) -> Backend:
        return self.db.backend

    def forget_bounds(self) -> None:
        """A bound was set or lifted here: read them again at the next write."""
        self._bounds_known.clear()

    def write(self, row: Row, conn: Any) -> tuple[int, bool]:
        """(id, created): the job written, or the holder of its unique key (nothing written)."""
        backend, queue = self.backend, row["queue"]
        if self._bounded(queue, conn):
            return self._in_turn(queue, conn, lambda: self._write_bounded(row, conn))
        if row["unique_key"] is not None:
            return self._write_unique(row, conn)
        store = backend.stores.jobs
        if conn is not None:
            return store.insert_job(row, conn), True
        return backend.retrying(lambda: store.insert_job(row)), True

    def write_waiting(self, row: Row, parents: list[int], conn: Any) -> int:
        """A job that waits for ``parents``, within its queue's bound as any job (the parents
        refused before the bound makes room)."""
        backend, queue = self.backend, row["queue"]
        if not self._bounded(queue, conn):
            return enqueue_waiting(backend, row, parents, conn)
        check_parents(backend, parents, conn)
        return self._in_turn(
            queue,
            conn,
            lambda: self._room_for(queue, 1, conn, lambda: write_waiting(backend, row, parents, conn)),
        )

    def write_many(
        self, template: Row, stored: list[Any], rows: list[Row] | None, parents: list[int] | None, conn: Any
    ) -> int:
        """enqueue_many's rows: ``rows`` when each has its own key or parents, else ``template``
        and the stored payloads (the store takes the template once). Returns how many were written."""
        backend, queue = self.backend, template["queue"]
        store = backend.stores.jobs

        def insert(c: Any = None) -> int:
            if rows is None:
                return store.insert_jobs(template, stored, c)
            if parents is not None:  # in a transaction: the caller's, or the bounded turn's
                return len(write_waiting_many(backend, rows, parents, c))
            return store.insert_unique_jobs(rows, c)

        if self._bounded(queue, conn):  # room for every payload, written or skipped for its key
            if parents is not None:  # refused before the bound makes room (drop_oldest writes)
                check_parents(backend, parents, conn)
            return self._in_turn(
                queue, conn, lambda: self._room_for(queue, len(stored), conn, lambda: insert(conn))
            )
        if parents is not None:
            assert rows is not None
            return len(enqueue_waiting_many(backend, rows, parents, conn))
        if conn is not None:
            return insert(conn)
        return backend.retrying(insert)

    def _bounded(self, queue: str, conn: Any) -> bool:
        """Whether ``queue`` has a bound, read at most once a second (on ``conn`` when given)."""
        known, now = self._bounds_known.get(queue), time.monotonic()
        if known is None or now >= known[0]:
            bound = self.backend.stores.bounds.bound(queue, conn)
            known = self._bounds_known[queue] = (now + BOUND_CACHE_SECONDS, bound is not None)
        return known[1]

    def _in_turn(self, queue: str, conn: Any, write: Callable[[], T]) -> T:
        """A write into a bounded queue, in one transaction (the caller's on ``conn``)."""
        backend = self.backend
        if conn is not None:
            return write()

        def own() -> T:
            with backend.transaction():
                return write()

        return backend.retrying(own)

    def _room_for(self, queue: str, count: int, conn: Any, write: Callable[[], T]) -> T:
        bound = take_turn(self.backend, queue, conn)
        if bound is not None:
            make_room(self.backend, queue, bound, count, conn)
        return write()

    def _write_bounded(self, row: Row, conn: Any) -> tuple[int, bool]:
        """Into a bounded queue, in its turn: a held unique key writes nothing and drops
        nothing; else room is made (or QueueFull raised), then the job written."""
        backend, queue = self.backend, row["queue"]
        bound = take_turn(backend, queue, conn)
        key = row["unique_key"]
        if key is not None:
            holder = backend.stores.jobs.unique_holder(key, conn)
            if holder is not None:
                return holder, False
        if bound is not None:
            make_room(backend, queue, bound, 1, conn)
        if key is not None:
            return self._write_unique(row, conn)
        return backend.stores.jobs.insert_job(row, conn), True

    def _write_unique(self, row: Row, conn: Any) -> tuple[int, bool]:
        """INSERT unless the key is held (the database decides: its unique index), else look up
        the holder; a holder that ended in between (none found) means the INSERT may now pass."""
        backend = self.backend
        store = backend.stores.jobs

        def attempt() -> tuple[int, bool] | None:
            job_id = store.insert_unique(row, conn)
            if job_id is not None:
                return job_id, True
            holder = store.unique_holder(row["unique_key"], conn)
            return None if holder is None else (holder, False)

        for _ in range(UNIQUE_ATTEMPTS):
            found = attempt() if conn is not None else backend.retrying(attempt)
            if found is not None:
                return found
        raise BackendError(
            f"unique key {row['unique_key']!r} changed hands {UNIQUE_ATTEMPTS} times while enqueueing: "
            "its jobs end as fast as they are enqueued; try again"
        )
