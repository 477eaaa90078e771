"""Bounded job queues (``Queue.configure``): at most ``max_length`` waiting jobs in a queue.

Waiting jobs (ready, scheduled, blocked) count; running and failed ones do not. An enqueue into
a full queue either drops the oldest waiting jobs (``overflow="drop_oldest"``) or raises
QueueFull having written nothing (``"reject"``). A dropped job is not deleted: it is marked
failed, its last error saying why, so that ``gc-error`` reports it (grouped under one cause)
and a human can requeue or delete it; a job someone asked for never vanishes without a trace.

Bounded enqueues into one queue take turns on its batchq_queue row (SELECT ... FOR UPDATE;
SQLite's single writer), so two producers at the limit never both see room. Producers read a
queue's bound from that row at most once a second (BOUND_CACHE_SECONDS): an unbounded queue's
enqueue stays one INSERT, and a bound set by configure() applies to other processes within a
second. The message queues (batchq.mq) share the settings' checks.
"""

from __future__ import annotations

from typing import Any

from ..backends import Backend
from ..core.failures import dropped_error, dropped_fingerprint
from ..errors import ConfigError, QueueFull
from ..stores.bounds import Bound as Bound  # re-exported: the store defines what it reads
from ..stores.bounds import stored_bound as stored_bound

OVERFLOW_POLICIES = ("drop_oldest", "reject")
MAX_LENGTH_RANGE = (1, 2**31 - 1)
BOUND_CACHE_SECONDS = 1.0  # how stale a producer's view of a queue's bound may be


def check_bound(max_length: int | None, overflow: str | None) -> str | None:
    """The overflow policy to store with ``max_length`` (drop_oldest by default; None when
    unbounded); raises ConfigError before anything is written."""
    if max_length is not None and (
        isinstance(max_length, bool)
        or not isinstance(max_length, int)
        or not MAX_LENGTH_RANGE[0] <= max_length <= MAX_LENGTH_RANGE[1]
    ):
        low, high = MAX_LENGTH_RANGE
        raise ConfigError(f"bad max_length {max_length!r}: use a whole number from {low} to {high}, or None")
    if overflow is not None and overflow not in OVERFLOW_POLICIES:
        raise ConfigError(f"bad overflow {overflow!r}: use 'drop_oldest' or 'reject'")
    if overflow is not None and max_length is None:
        raise ConfigError("overflow needs a max_length: pass the bound the policy is for")
    if max_length is None:
        return None
    return overflow or "drop_oldest"


def set_bound(backend: Backend, queue: str, max_length: int | None, overflow: str | None) -> int:
    """Queue.configure's transaction: store the bound, and under drop_oldest fail the waiting jobs
    beyond it at once; returns how many."""
    policy = check_bound(max_length, overflow)

    def configure() -> int:
        with backend.transaction():
            backend.stores.bounds.set(queue, max_length, policy)
            bound = take_turn(backend, queue, None)
            if bound is None or bound.overflow == "reject":
                return 0
            return _drop_oldest(
                backend, queue, bound, _waiting(backend, queue, None) - bound.max_length, None
            )

    return backend.retrying(configure)


def take_turn(backend: Backend, queue: str, conn: Any) -> Bound | None:
    """A bounded enqueue's first statement: lock the queue's row (bounded producers of one queue
    take turns) and read its bound as it stands (None: no longer bounded)."""
    return backend.stores.bounds.lock(queue, conn)


def make_room(backend: Backend, queue: str, bound: Bound, count: int, conn: Any) -> None:
    """After take_turn, before an enqueue writes ``count`` jobs: refuse (QueueFull, nothing
    written) or fail the oldest waiting jobs so that the new ones fit."""
    if count > bound.max_length:
        raise QueueFull(
            f"{count} jobs are more than queue {queue!r} holds (max_length {bound.max_length}): "
            f"nothing was enqueued; enqueue at most {bound.max_length} at a time"
        )
    waiting = _waiting(backend, queue, conn)
    excess = waiting + count - bound.max_length
    if excess > 0 and bound.overflow == "reject":
        raise QueueFull(
            f"queue {queue!r} is full ({waiting} of max_length {bound.max_length} waiting jobs, "
            "overflow='reject'): nothing was enqueued; let workers drain it, or raise its bound "
            "with Queue.configure()"
        )
    if excess > 0:
        _drop_oldest(backend, queue, bound, excess, conn)


def fitting(backend: Backend, queue: str, bound: Bound, count: int, conn: Any) -> int:
    """After take_turn, for a producer that may write fewer jobs than it has (a cron tick): how
    many of ``count`` to write. reject: as many as there is room for (the rest are refused);
    drop_oldest: all of them, trim() failing the oldest waiting jobs afterwards."""
    if bound.overflow != "reject":
        return count
    return max(0, min(count, bound.max_length - _waiting(backend, queue, conn)))


def trim(backend: Backend, queue: str, bound: Bound, conn: Any) -> int:
    """After a drop_oldest write of more jobs than there was room for: fail the oldest waiting
    jobs beyond the bound (the write's own oldest among them when it wrote more than the bound)."""
    if bound.overflow == "reject":
        return 0
    return _drop_oldest(backend, queue, bound, _waiting(backend, queue, conn) - bound.max_length, conn)


def full_reason(queue: str, bound: Bound) -> str:
    """Why a job was not written into a full reject queue."""
    return (
        f"queue {queue!r} is full (max_length {bound.max_length} waiting jobs, overflow='reject'): "
        "let workers drain it, or raise its bound with Queue.configure()"
    )


def _waiting(backend: Backend, queue: str, conn: Any) -> int:
    return backend.stores.bounds.waiting(queue, conn)


def _drop_oldest(backend: Backend, queue: str, bound: Bound, excess: int, conn: Any) -> int:
    """Fail the ``excess`` oldest waiting jobs (never a running one), with the reason."""
    error = dropped_error(queue, bound.max_length)
    if excess <= 0:
        return 0
    store = backend.stores.bounds
    victims = store.oldest_waiting(queue, excess, conn)
    if not victims:
        return 0
    # A victim a worker claims meanwhile is left alone: it stopped waiting, which made room too.
    return store.drop(victims, error, dropped_fingerprint(error), conn)
