"""Locks and semaphores in the database (seed 003's improved lock table).

A lock is one row of ``batchq_lock``; a semaphore of limit N is N rows (slots 0 .. N-1) of one
name, so a lock is the semaphore of limit 1 with the same name. A row is taken by one atomic
UPDATE where it is free or its ``expire_at`` has passed on the database server's clock, and
marked with the taker's owner id (host:pid:random) and a fencing token that grows by one on
every acquisition. Renew and release touch the row only where both are still the holder's, so
a holder whose lock expired and was taken, or was released by an operator, gets LockLost.

Renewal is explicit: the code doing the work calls ``renew()`` as it makes progress. There is
no timer thread, which would keep a lock alive while the work is stuck (seed 003's warning).
Every statement is an operation of the lock store (batchq.stores.locks).
"""

from __future__ import annotations

import logging
import random
import re
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ..backends import Database
from ..backends.liveness import owner_name
from ..core.config import Duration, parse_duration
from ..errors import BatchqError, ConfigError, LockError, LockLost, LockNotAcquired
from ..stores.locks import LockInfo, LockSlot, LockStore, Taken

log = logging.getLogger("batchq.coordination.locks")

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
            slots = self._slots()
            taken = self._ours(slots)  # an earlier acquire's answer was lost on the way back
            if taken is None and self._create_missing_slots(slots):
                taken = self._take()
                slots = slots if taken is not None else self._slots()
            if taken is None:
                return self._refused(slots)
        self.slot, self.token = taken.slot, taken.token
        return Acquired(True, token=self.token, slot=self.slot)

    @property
    def _store(self) -> LockStore:
        return self._handle.backend.stores.locks

    def _take(self) -> Taken | None:
        """One atomic UPDATE takes a free or expired slot (LockStore.take)."""
        return self._store.take(self.name, self.owner, limit=self.limit, ttl=self.ttl)

    def _slots(self) -> list[LockSlot]:
        return self._store.slots(self.name)

    def _ours(self, slots: list[LockSlot]) -> Taken | None:
        for found in slots:
            if found.held and found.lock_by == self.owner and found.slot < self.limit:
                return Taken(found.slot, found.token)
        return None

    def _create_missing_slots(self, slots: list[LockSlot]) -> bool:
        """Insert the free rows of the slots below limit that do not exist yet; False if none."""
        existing = {found.slot for found in slots}
        missing = [slot for slot in range(self.limit) if slot not in existing]
        if missing:
            self._store.create_slots(self.name, missing)
        return bool(missing)

    def _refused(self, slots: list[LockSlot]) -> Acquired:
        mine = [found for found in slots if found.slot < self.limit]
        held = [found for found in mine if found.held]
        if any(found.token >= MAX_TOKEN and not found.held for found in mine) and len(held) < self.limit:
            raise LockError(
                f"{self}: its fencing token is at its largest value ({MAX_TOKEN}), so it cannot be "
                "taken again: use another name"
            )
        left = [found.expires_in for found in held if found.expires_in is not None]
        holders = tuple(str(found.lock_by) for found in held)
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
        assert self.slot is not None
        if self._store.renew(self.name, self.slot, self.owner, self.token, seconds):
            return True
        raise self._lost("renew")

    def release(self) -> bool:
        """Free the lock. False if this handle holds nothing; LockLost if it was lost meanwhile."""
        if self.token is None:
            return False
        assert self.slot is not None
        released = self._store.release(self.name, self.slot, self.owner, self.token)
        if not released:
            raise self._lost("release")
        self.token = self.slot = None
        return True

    def _lost(self, action: str) -> LockLost:
        """The holding is gone: forget it, and say what became of the row."""
        token, slot = self.token, self.slot
        self.token = self.slot = None
        row = next((found for found in self._slots() if found.slot == slot), None)
        if row is None:
            what = "its row was deleted"
        elif row.token != token:
            what = f"it expired and was taken by {row.lock_by} (token {row.token})"
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
    return [
        info
        for info in handle.backend.stores.locks.all()
        if (name is None or info.name == name) and (include_free or info.state != "free")
    ]


def force_release(handle: Database, name: str) -> int:
    """Free every slot of ``name`` whoever holds it; returns how many were not free. The
    holders are not told until their next renew or release (LockLost)."""
    return handle.backend.stores.locks.force_release(check_lock_name(name))


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
