"""Locks and semaphores in the database (seed 003's improved lock table).

A lock is one row of ``batchq_lock``; a semaphore of limit N is N rows (slots 0 .. N-1) of one
name, so a lock is the semaphore of limit 1 with the same name. A row is taken by one atomic
UPDATE where it is free or its ``expire_at`` has passed on the database server's clock, and
marked with the taker's owner id (host:pid:random) and a fencing token that grows by one on
every acquisition. Renew and release touch the row only where both are still the holder's, so
a holder whose lock expired and was taken, or was released by an operator, gets LockLost.

Renewal is explicit: the code doing the work calls ``renew()`` as it makes progress. There is
no timer thread, which would keep a lock alive while the work is stuck (seed 003's warning).
Every statement is a named query in ``sql/<dialect>/locks.sql``.
"""

from __future__ import annotations

import logging
import random
import re
import time
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any

from .backends import Backend, Database, Row, stored_time
from .backends.liveness import owner_name
from .config import Duration, parse_duration
from .errors import BatchqError, ConfigError, LockError, LockLost, LockNotAcquired

log = logging.getLogger("batchq.locks")

# Like queue names, longer (keys such as "invoice:customer-42:2024-06"), and '/' allowed.
LOCK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}")  # used with fullmatch
MAX_LIMIT = 1000  # a semaphore's slots are rows: a pool, not a counter
MIN_TTL_SECONDS = 0.001  # SQLite keeps times to the millisecond
MAX_TOKEN = 2**63 - 1  # BIGINT; a row written at the top can never be taken again
POLL_FIRST_SECONDS = 0.05  # a waiting acquire polls this soon, doubling up to POLL_MAX_SECONDS
POLL_MAX_SECONDS = 1.0


def check_lock_name(name: Any) -> str:
    if not isinstance(name, str) or not LOCK_NAME.fullmatch(name):
        raise ConfigError(
            f"bad lock name {_brief(name)}: use 1-128 letters, digits, '_', '-', '.', ':', '/', "
            "starting with a letter or digit"
        )
    return name


def check_ttl(ttl: Duration, what: str = "ttl") -> float:
    seconds = parse_duration(ttl, what)
    if seconds < MIN_TTL_SECONDS:
        raise ConfigError(f"bad {what} {_brief(ttl)}: a lock's ttl is at least 1ms (as in 30s, 5m)")
    return seconds


def check_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"bad semaphore limit {_brief(limit)}: use a whole number from 1 to {MAX_LIMIT}")
    return limit


@dataclass(frozen=True)
class Acquired:
    """What an acquire got: true when the lock (a semaphore slot) is now this handle's."""

    acquired: bool
    token: int | None = None  # the fencing token of this acquisition
    slot: int | None = None  # 0 for a lock; which of a semaphore's slots
    holders: tuple[str, ...] = ()  # when refused: who holds it (every slot of a semaphore)
    retry_in: float | None = None  # when refused: seconds until the first holding expires

    def __bool__(self) -> bool:
        return self.acquired


@dataclass(frozen=True)
class LockInfo:
    """One row of the lock table as an operator sees it (`batchq locks`)."""

    name: str
    slot: int
    state: str  # free, locked, extended; 'expired' for a holding whose time has passed
    held: bool  # not free, and its expire_at is in the future on the server's clock
    holder: str | None  # lock_by while held; None when free or expired
    last_holder: str | None  # lock_by as the row has it, held or not
    expires_in: float | None  # seconds from now on the server's clock; None when free
    token: int
    expire_at: datetime | Any  # aware UTC; a value written by hand as it is
    taken_at: datetime | Any
    renewed_at: datetime | Any


class Lock:
    """A handle on the lock ``name``: ``acquire``, ``renew``, ``release``, or ``with``.

    Nothing is written until ``acquire``. One handle is one holder (its owner id): it holds the
    lock at most once at a time, and ``token`` is its current acquisition's fencing token.
    """

    kind = "lock"

    def __init__(self, handle: Database, name: str, *, ttl: Duration = 60, wait: Duration = 0) -> None:
        self.name = check_lock_name(name)
        self.ttl = check_ttl(ttl)
        self.wait = parse_duration(wait, "wait")
        self.limit = 1
        # Per handle: two handles of one process never pass for each other.
        self.owner = owner_name(random_bytes=8)
        self.token: int | None = None
        self.slot: int | None = None
        self._handle = handle

    def __repr__(self) -> str:
        return f"{self.kind} {self.name!r}"

    @property
    def held(self) -> bool:
        """True between a successful acquire and a release (or a LockLost); the row decides, not this."""
        return self.token is not None

    @property
    def _backend(self) -> Backend:
        return self._handle.backend

    # -- acquire ----------------------------------------------------------------------

    def acquire(self, wait: Duration | None = None) -> Acquired:
        """Take the lock if it is free or expired, polling for up to ``wait`` (the handle's by
        default; 0 tries once). Returns an Acquired that is true when it is now this handle's."""
        if self.held:
            raise LockError(f"{self} is already held by this handle: renew() or release() it first")
        budget = self.wait if wait is None else parse_duration(wait, "wait")
        deadline = time.monotonic() + budget
        pause = POLL_FIRST_SECONDS
        while True:
            result = self._try_acquire()
            remaining = deadline - time.monotonic()
            if result or remaining <= 0:
                return result
            soonest = max(result.retry_in or pause, 0.01)  # a holding about to expire: look then
            time.sleep(min(pause * random.uniform(0.5, 1.0), soonest, remaining))
            pause = min(pause * 2, POLL_MAX_SECONDS)

    def _try_acquire(self) -> Acquired:
        taken = self._take()
        if taken is None:
            rows = self._rows()
            taken = self._ours(rows)  # an earlier acquire's answer was lost on the way back
            if taken is None and self._create_missing_slots(rows):
                taken = self._take()
                rows = rows if taken is not None else self._rows()
            if taken is None:
                return self._refused(rows)
        self.slot, self.token = taken
        return Acquired(True, token=self.token, slot=self.slot)

    def _params(self, **extra: Any) -> dict[str, Any]:
        return {"name": self.name, "owner": self.owner, "limit": self.limit, "ttl": self.ttl, **extra}

    def _take(self) -> tuple[int, int] | None:
        """One atomic UPDATE takes a free or expired slot; MySQL then reads which (no RETURNING).

        MySQL reads it in the UPDATE's transaction, whose row lock keeps the slot this owner's
        until the read: a ttl shorter than the round trip has expired by then, and another
        acquirer could otherwise take it in between (the token advanced: it was acquired)."""
        backend, params = self._backend, self._params()

        def take() -> Row | None:
            if backend.has_update_returning:  # else (MySQL) lock_take, then lock_taken
                return backend.fetchone("lock_take", params)
            with backend.transaction():
                if backend.execute("lock_take", params) == 0:
                    return None
                return backend.fetchone("lock_taken", params)

        row = backend.retrying(take)
        return None if row is None else (int(row["slot"]), int(row["token"]))

    def _rows(self) -> list[Row]:
        return self._backend.fetchall("lock_rows", {"name": self.name})

    def _ours(self, rows: list[Row]) -> tuple[int, int] | None:
        for row in rows:
            if row["held"] and row["lock_by"] == self.owner and int(row["slot"]) < self.limit:
                return int(row["slot"]), int(row["token"])
        return None

    def _create_missing_slots(self, rows: list[Row]) -> bool:
        """Insert the free rows of the slots below limit that do not exist yet; False if none."""
        existing = {int(row["slot"]) for row in rows}
        missing = [self._params(slot=slot) for slot in range(self.limit) if slot not in existing]
        if missing:
            backend = self._backend
            backend.retrying(lambda: backend.insert_many("lock_slots_create", missing))
        return bool(missing)

    def _refused(self, rows: list[Row]) -> Acquired:
        mine = [row for row in rows if int(row["slot"]) < self.limit]
        held = [row for row in mine if row["held"]]
        if any(int(row["token"]) >= MAX_TOKEN and not row["held"] for row in mine) and len(held) < self.limit:
            raise LockError(
                f"{self}: its fencing token is at its largest value ({MAX_TOKEN}), so it cannot be "
                "taken again: use another name"
            )
        left = [float(row["expires_in"]) for row in held if row["expires_in"] is not None]
        holders = tuple(str(row["lock_by"]) for row in held)
        # Nothing held yet refused: a slot was being taken at that very moment; look again soon.
        return Acquired(False, holders=holders, retry_in=max(min(left), 0.0) if left else 0.0)

    # -- renew and release ------------------------------------------------------------

    def renew(self, ttl: Duration | None = None) -> bool:
        """Push the expiry to ``ttl`` (the handle's by default) from now on the server's clock.

        False if this handle holds nothing; LockLost if its lock was taken by another or
        released by an operator. A lock whose time ran out but that nobody took since is
        renewed: its token proves nobody held it in between.
        """
        seconds = self.ttl if ttl is None else check_ttl(ttl)
        if self.token is None:
            return False
        return self._own_update("lock_renew", "renew", ttl=seconds)

    def release(self) -> bool:
        """Free the lock. False if this handle holds nothing; LockLost if it was lost meanwhile."""
        if self.token is None:
            return False
        released = self._own_update("lock_release", "release")
        self.token = self.slot = None
        return released

    def _own_update(self, query: str, action: str, **extra: Any) -> bool:
        backend, params = self._backend, self._params(slot=self.slot, token=self.token, **extra)
        if backend.retrying(lambda: backend.execute(query, params)) == 1:
            return True
        raise self._lost(action)

    def _lost(self, action: str) -> LockLost:
        """The holding is gone: forget it, and say what became of the row."""
        token, slot = self.token, self.slot
        self.token = self.slot = None
        row = next((r for r in self._rows() if int(r["slot"]) == slot), None)
        if row is None:
            what = "its row was deleted"
        elif int(row["token"]) != token:
            what = f"it expired and was taken by {row['lock_by']} (token {row['token']})"
        else:
            what = "it was released by someone else (an operator's `batchq locks release --force`?)"
        return LockLost(f"cannot {action} {self} (token {token}): {what}")

    # -- with ---------------------------------------------------------------------------

    def __enter__(self) -> Lock:
        result = self.acquire()
        if not result:
            raise LockNotAcquired(self._refusal(result))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.release()  # a LockLost here tells the block's work may have overlapped another's
            return
        try:
            self.release()
        except BatchqError as release_error:  # the block's own error is the one to see
            log.warning("%s: not released after an error in its block: %s", self, release_error)

    def _refusal(self, result: Acquired) -> str:
        holders = ", ".join(result.holders) or "another holder"
        when = f"; it frees in {result.retry_in:.1f}s at the latest" if result.retry_in else ""
        return f"{self} is held by {holders}{when} (waited {self.wait:g}s)"


class Semaphore(Lock):
    """A handle on one of ``limit`` slots of the semaphore ``name``: at most ``limit`` handles
    hold it at once. Callers of one name should agree on its limit: each takes only slots below
    its own. The fencing token is per slot: a fenced resource keeps the highest token per slot."""

    kind = "semaphore"

    def __init__(
        self, handle: Database, name: str, limit: int, *, ttl: Duration = 60, wait: Duration = 0
    ) -> None:
        super().__init__(handle, name, ttl=ttl, wait=wait)
        self.limit = check_limit(limit)

    def __repr__(self) -> str:
        return f"semaphore {self.name!r} (limit {self.limit})"

    def __enter__(self) -> Semaphore:
        super().__enter__()
        return self


# -- the operator's view ---------------------------------------------------------------


def list_locks(handle: Database, *, name: str | None = None, include_free: bool = False) -> list[LockInfo]:
    """Every lock and semaphore slot (held or expired; with include_free, free ones too)."""
    found = [_info(row) for row in handle.backend.fetchall("locks_list")]
    return [
        info
        for info in found
        if (name is None or info.name == name) and (include_free or info.state != "free")
    ]


def force_release(handle: Database, name: str) -> int:
    """Free every slot of ``name`` whoever holds it; returns how many were not free. The
    holders are not told until their next renew or release (LockLost)."""
    params = {"name": check_lock_name(name)}
    backend = handle.backend
    return backend.retrying(lambda: backend.execute("lock_force_release", params))


def _info(row: Row) -> LockInfo:
    held = bool(row["held"])
    expires_in = None if row["expires_in"] is None else float(row["expires_in"])
    state = str(row["state"])
    if state != "free" and not held:
        state = "expired"
    return LockInfo(
        name=str(row["name"]),
        slot=int(row["slot"]),
        state=state,
        held=held,
        holder=str(row["lock_by"]) if held and row["lock_by"] is not None else None,
        last_holder=None if row["lock_by"] is None else str(row["lock_by"]),
        expires_in=None if state == "free" else expires_in,
        token=int(row["token"]),
        expire_at=stored_time(row["expire_at"]),
        taken_at=stored_time(row["taken_at"]),
        renewed_at=stored_time(row["renewed_at"]),
    )


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
