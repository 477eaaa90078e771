"""The lock store's contract (batchq.stores.locks): each method called directly, on every dialect.

What batchq.coordination.locks builds on it (polling, LockLost, semaphores as handles) is tested in
test_locks.py; here the operations alone, so that a dialect's store can be checked by itself.
"""

from __future__ import annotations

from batchq import Queue
from batchq.stores.locks import LockInfo, LockSlot, LockStore, MySQLLockStore, Taken

OWNER, OTHER = "host:1:aaaa", "host:2:bbbb"


def store(queue: Queue) -> LockStore:
    return queue.backend.stores.locks


def test_each_dialect_gets_its_variant(queue: Queue) -> None:
    expected = MySQLLockStore if queue.backend.dialect == "mysql" else LockStore
    assert type(store(queue)) is expected
    assert store(queue) is store(queue)  # made once per connection


def test_take_needs_a_slot_row_and_then_gives_slot_and_token(queue: Queue) -> None:
    locks = store(queue)
    assert locks.take("report", OWNER, limit=1, ttl=30) is None  # no row yet
    locks.create_slots("report", [0])
    assert locks.take("report", OWNER, limit=1, ttl=30) == Taken(slot=0, token=1)
    assert locks.take("report", OTHER, limit=1, ttl=30) is None  # held


def test_create_slots_leaves_existing_rows_as_they_are(queue: Queue) -> None:
    locks = store(queue)
    locks.create_slots("pool", [0])
    locks.take("pool", OWNER, limit=1, ttl=30)
    locks.create_slots("pool", [0, 1])
    assert [(s.slot, s.held, s.lock_by) for s in locks.slots("pool")] == [(0, True, OWNER), (1, False, None)]


def test_slots_tell_holder_token_and_time_left(queue: Queue) -> None:
    locks = store(queue)
    assert locks.slots("report") == []
    locks.create_slots("report", [0])
    locks.take("report", OWNER, limit=1, ttl=30)
    (slot,) = locks.slots("report")
    assert isinstance(slot, LockSlot)
    assert (slot.slot, slot.held, slot.lock_by, slot.token) == (0, True, OWNER, 1)
    assert slot.expires_in is not None and 0 < slot.expires_in <= 30


def test_a_semaphore_gives_each_taker_another_slot(queue: Queue) -> None:
    locks = store(queue)
    locks.create_slots("pool", [0, 1])
    first = locks.take("pool", OWNER, limit=2, ttl=30)
    second = locks.take("pool", OTHER, limit=2, ttl=30)
    assert first is not None and second is not None
    assert {first.slot, second.slot} == {0, 1}
    assert locks.take("pool", "host:3:cccc", limit=2, ttl=30) is None
    assert locks.take("pool", "host:3:cccc", limit=3, ttl=30) is None  # slot 2 has no row yet


def test_renew_and_release_only_the_holders_acquisition(queue: Queue) -> None:
    locks = store(queue)
    locks.create_slots("report", [0])
    taken = locks.take("report", OWNER, limit=1, ttl=30)
    assert taken is not None
    assert locks.renew("report", 0, OWNER, taken.token, 60) is True
    assert locks.renew("report", 0, OWNER, taken.token + 1, 60) is False  # another acquisition
    assert locks.renew("report", 0, OTHER, taken.token, 60) is False  # another owner
    assert locks.release("report", 0, OTHER, taken.token) is False
    assert locks.release("report", 0, OWNER, taken.token) is True
    assert locks.release("report", 0, OWNER, taken.token) is False  # free already
    assert locks.renew("report", 0, OWNER, taken.token, 60) is False
    assert locks.take("report", OTHER, limit=1, ttl=30) == Taken(slot=0, token=2)


def test_force_release_frees_every_held_slot_of_a_name(queue: Queue) -> None:
    locks = store(queue)
    locks.create_slots("pool", [0, 1, 2])
    locks.take("pool", OWNER, limit=3, ttl=30)
    locks.take("pool", OTHER, limit=3, ttl=30)
    assert locks.force_release("pool") == 2
    assert locks.force_release("pool") == 0
    assert not any(slot.held for slot in locks.slots("pool"))


def test_all_lists_every_slot_as_an_operator_sees_it(queue: Queue) -> None:
    locks = store(queue)
    locks.create_slots("b-lock", [0])
    locks.create_slots("a-pool", [0, 1])
    locks.take("b-lock", OWNER, limit=1, ttl=30)
    found = locks.all()
    assert all(isinstance(info, LockInfo) for info in found)
    assert [(i.name, i.slot, i.state, i.holder) for i in found] == [
        ("a-pool", 0, "free", None),
        ("a-pool", 1, "free", None),
        ("b-lock", 0, "locked", OWNER),
    ]
    held = found[2]
    assert held.held and held.token == 1 and held.last_holder == OWNER
    assert held.expires_in is not None and 0 < held.expires_in <= 30
    assert held.expire_at is not None and held.taken_at is not None and held.renewed_at is None
