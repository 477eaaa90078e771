"""The lock table's operations (batchq.coordination.locks): take, renew and release a slot, list, force.

Statements in ``sql/<dialect>/locks.sql``. A slot is taken by one atomic UPDATE where it is free
or expired; MySQL, with no UPDATE ... RETURNING, then reads which slot it took (MySQLLockStore).
Writes are retried on deadlocks and lock waits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.stored import Row, stored_time
from .base import Store


@dataclass(frozen=True)
class Taken:
    """A slot this owner just took, and the fencing token of that acquisition."""

    slot: int
    token: int


@dataclass(frozen=True)
class LockSlot:
    """One slot of a name as an acquirer sees it, on the server's clock."""

    slot: int
    held: bool  # not free, and its expire_at is in the future
    lock_by: str | None  # its holder, or its last one (held or not)
    token: int
    expires_in: float | None  # seconds from now (negative once expired)


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


class LockStore(Store):
    """Locks and semaphore slots: rows of ``batchq_lock``, by name and slot."""

    def take(self, name: str, owner: str, *, limit: int, ttl: float) -> Taken | None:
        """Take the first slot below ``limit`` that is free or expired for ``ttl`` seconds; None
        if every existing one is held (or none exists yet: create_slots)."""
        params = {"name": name, "owner": owner, "limit": limit, "ttl": ttl}
        row = self.db.retrying(lambda: self._take(params))
        return None if row is None else Taken(int(row["slot"]), int(row["token"]))

    def _take(self, params: dict[str, Any]) -> Row | None:
        return self.db.fetchone("lock_take", params)

    def slots(self, name: str) -> list[LockSlot]:
        """Every existing slot of ``name``, by slot."""
        return [_slot(row) for row in self.db.fetchall("lock_rows", {"name": name})]

    def create_slots(self, name: str, slots: Sequence[int]) -> None:
        """Create the free rows of ``slots`` where they do not exist yet."""
        rows = [{"name": name, "slot": slot} for slot in slots]
        self.db.retrying(lambda: self.db.insert_many("lock_slots_create", rows))

    def renew(self, name: str, slot: int, owner: str, token: int, ttl: float) -> bool:
        """Push a holding's expiry to ``ttl`` from now; False when it is no longer this
        acquisition's (taken by another, or released)."""
        params = {"name": name, "slot": slot, "owner": owner, "token": token, "ttl": ttl}
        return self.db.retrying(lambda: self.db.execute("lock_renew", params)) == 1

    def release(self, name: str, slot: int, owner: str, token: int) -> bool:
        """Free a holding; False when it is no longer this acquisition's."""
        params = {"name": name, "slot": slot, "owner": owner, "token": token}
        return self.db.retrying(lambda: self.db.execute("lock_release", params)) == 1

    def force_release(self, name: str) -> int:
        """Free every slot of ``name`` whoever holds it; how many were not free."""
        return self.db.retrying(lambda: self.db.execute("lock_force_release", {"name": name}))

    def all(self) -> list[LockInfo]:
        """Every lock and semaphore slot, by name and slot."""
        return [_info(row) for row in self.db.fetchall("locks_list")]


class MySQLLockStore(LockStore, dialect="mysql"):
    def _take(self, params: dict[str, Any]) -> Row | None:
        """lock_take, then lock_taken in its transaction, whose row lock keeps the slot this
        owner's until the read: a ttl shorter than the round trip has expired by then, and
        another acquirer could otherwise take it in between (the token advanced: it was taken)."""
        with self.db.transaction():
            if self.db.execute("lock_take", params) == 0:
                return None
            return self.db.fetchone("lock_taken", params)


def _slot(row: Row) -> LockSlot:
    return LockSlot(
        slot=int(row["slot"]),
        held=bool(row["held"]),
        lock_by=None if row["lock_by"] is None else str(row["lock_by"]),
        token=int(row["token"]),
        expires_in=None if row["expires_in"] is None else float(row["expires_in"]),
    )


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
