"""Locks and semaphores (batchq.coordination.locks), on every backend, against real servers.

Expiry is the server's: ttls of about a second, and waiting for the lock to come free, never a
fake clock for the database. A fake client clock shows the client's time has no say.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from freezegun import freeze_time

from batchq import (
    BackendError,
    ConfigError,
    Lock,
    LockError,
    LockLost,
    LockNotAcquired,
    Queue,
)
from batchq.coordination.locks import MAX_TOKEN, force_release, list_locks
from tests.support.db import run_query
from tests.support.processes import wait_for

# -- acquire and release ---------------------------------------------------------------


def test_one_holder_at_a_time(queue: Queue) -> None:
    first, second = queue.lock("nightly-report", ttl="30s"), queue.lock("nightly-report", ttl="30s")
    got = first.acquire()
    assert got and got.acquired and got.token == 1 and got.slot == 0
    assert first.held and first.token == 1

    refused = second.acquire()
    assert not refused and refused.token is None
    assert refused.holders == (first.owner,)
    assert refused.retry_in is not None and 25 < refused.retry_in <= 30  # the server's time left
    assert not second.held

    assert first.release() is True
    assert not first.held and first.token is None
    assert first.release() is False  # nothing held: nothing touched
    assert second.acquire().token == 2


def test_token_grows_on_every_acquisition(queue: Queue) -> None:
    lock, other = queue.lock("fenced"), queue.lock("fenced")
    tokens = []
    for holder in (lock, other, lock, lock, other):
        tokens.append(holder.acquire().token)
        holder.release()
    assert tokens == [1, 2, 3, 4, 5]


def test_owner_is_host_pid_random(queue: Queue) -> None:
    import os
    import socket

    one, two = queue.lock("x"), queue.lock("x")
    host, pid, rand = one.owner.rsplit(":", 2)
    assert (host, pid) == (socket.gethostname(), str(os.getpid()))
    assert len(rand) == 16 and one.owner != two.owner


def test_acquire_twice_on_one_handle_is_refused(queue: Queue) -> None:
    lock = queue.lock("x")
    lock.acquire()
    with pytest.raises(LockError, match="already held by this handle"):
        lock.acquire()
    assert lock.token == 1  # still held, as before


def test_names_are_case_sensitive(queue: Queue) -> None:
    assert queue.lock("Report").acquire()
    assert queue.lock("report").acquire()  # another lock (MySQL compares names as binary)


# -- expiry and renewal, on the server's clock --------------------------------------------


def test_lock_comes_free_when_its_ttl_runs_out(queue: Queue) -> None:
    holder, waiter = queue.lock("short", ttl="1s"), queue.lock("short")
    holder.acquire()
    started = time.monotonic()
    assert not waiter.acquire()
    got = wait_for(waiter.acquire, timeout=10, interval=0.05)
    assert got.token == 2
    assert time.monotonic() - started > 0.5  # not before its time (1s, less our own delays)


def test_waiting_acquire_gets_the_lock_when_it_expires(queue: Queue) -> None:
    queue.lock("short", ttl="0.5s").acquire()
    started = time.monotonic()
    got = queue.lock("short").acquire(wait="5s")
    assert got.token == 2 and 0.2 < time.monotonic() - started < 4


def test_waiting_acquire_gives_up_after_wait(queue: Queue) -> None:
    holder = queue.lock("long", ttl="30s")
    holder.acquire()
    started = time.monotonic()
    refused = queue.lock("long").acquire(wait="0.4s")
    assert not refused and refused.holders == (holder.owner,)
    assert 0.35 < time.monotonic() - started < 3


def test_renew_keeps_the_lock_past_its_first_ttl(queue: Queue) -> None:
    holder, other = queue.lock("renewed", ttl="1s"), queue.lock("renewed")
    holder.acquire()
    for _ in range(3):
        time.sleep(0.5)
        assert holder.renew() is True
    assert not other.acquire()  # 1.5s after acquiring, held thanks to the renewals
    (info,) = list_locks(queue, name="renewed")
    assert (info.state, info.holder, info.token) == ("extended", holder.owner, 1)
    assert info.renewed_at is not None and info.expires_in is not None and 0 < info.expires_in <= 1
    assert holder.renew(ttl="1m") is True
    (info,) = list_locks(queue, name="renewed")
    assert info.expires_in is not None and 55 < info.expires_in <= 60


def test_renew_when_not_held_reports_false(queue: Queue) -> None:
    lock = queue.lock("x")
    assert lock.renew() is False
    lock.acquire()
    lock.release()
    assert lock.renew() is False


def test_expired_lock_nobody_took_can_still_be_renewed(queue: Queue) -> None:
    """Its token proves nobody held it in between: the holding goes on, and says so in the row."""
    holder = queue.lock("lapsed", ttl="0.3s")
    holder.acquire()
    time.sleep(0.6)
    assert list_locks(queue, name="lapsed")[0].state == "expired"
    assert holder.renew(ttl="30s") is True
    assert not queue.lock("lapsed").acquire()
    assert holder.token == 1


@pytest.mark.parametrize("limit", [1, 3])
def test_ttl_shorter_than_a_round_trip_still_says_acquired(server_url: str, limit: int) -> None:
    """The holding expires before the answer is back: the answer is still what happened (the
    token advanced, the row names this holder), and renew proves nobody held it in between."""
    from batchq.core.config import parse_url
    from tests.support.tcp_proxy import TcpProxy

    port = parse_url(server_url).port or {"mysql": 3306, "postgresql": 5432}[parse_url(server_url).dialect]
    with TcpProxy(port, latency=0.02) as proxy:
        far = Queue(proxy.url_for(server_url))
        try:
            first = far.semaphore("brief", limit=limit)
            first.acquire()
            first.release()  # its rows exist now: the next acquire takes in one UPDATE
            brief = far.semaphore("brief", limit=limit, ttl="5ms")
            got = brief.acquire()
            assert got and (got.token, got.slot) == (brief.token, brief.slot) == (2, 0)
            [info] = [i for i in list_locks(far, name="brief") if i.slot == got.slot]
            assert (info.last_holder, info.token, info.state) == (brief.owner, got.token, "expired")
            assert brief.renew(ttl="30s") is True
        finally:
            far.close()


# -- a lost lock is never a silent success ---------------------------------------------------


def _taken_over(queue: Queue) -> tuple[Lock, Lock]:
    old, new = queue.lock("job-runner", ttl="0.5s"), queue.lock("job-runner", ttl="30s")
    old.acquire()
    wait_for(new.acquire, timeout=10, interval=0.05)
    return old, new


def test_renew_after_another_took_the_lock_raises_lock_lost(queue: Queue) -> None:
    old, new = _taken_over(queue)
    with pytest.raises(LockLost, match=rf"taken by {new.owner} \(token 2\)"):
        old.renew()
    assert not old.held
    assert list_locks(queue, name="job-runner")[0].holder == new.owner  # untouched
    assert new.renew() is True


def test_release_after_another_took_the_lock_raises_lock_lost(queue: Queue) -> None:
    old, new = _taken_over(queue)
    with pytest.raises(LockLost, match="token 1"):
        old.release()
    assert not old.held and old.release() is False
    assert list_locks(queue, name="job-runner")[0].holder == new.owner  # still the new holder's


def test_force_release_frees_and_the_holder_learns_it(queue: Queue) -> None:
    holder = queue.lock("stuck", ttl="1h")
    holder.acquire()
    assert force_release(queue, "stuck") == 1
    assert force_release(queue, "stuck") == 0
    assert queue.lock("stuck").acquire().token == 2
    with pytest.raises(LockLost, match="taken by"):
        holder.renew()


def test_force_release_before_anyone_takes_it_says_released(queue: Queue) -> None:
    holder = queue.lock("stuck", ttl="1h")
    holder.acquire()
    force_release(queue, "stuck")
    with pytest.raises(LockLost, match="released by someone else"):
        holder.release()


def test_a_lost_acquire_answer_is_adopted(queue: Queue) -> None:
    """An acquire whose answer never came back (connection lost) left the row ours: the next
    acquire of the same holder gets it back rather than waiting out its own ttl."""
    first = queue.lock("adopt", ttl="30s")
    first.acquire()
    retry = queue.lock("adopt", ttl="30s")
    retry.owner = first.owner  # the same holder, which never saw its answer
    got = retry.acquire()
    assert got and got.token == 1


# -- with ---------------------------------------------------------------------------------


def test_with_holds_the_lock_for_the_block(queue: Queue) -> None:
    with queue.lock("nightly-report", ttl="5m", wait="30s") as lock:
        assert lock.held and lock.token == 1
        assert not queue.lock("nightly-report").acquire()
        assert lock.renew()
    assert not lock.held
    assert queue.lock("nightly-report").acquire().token == 2


def test_with_refuses_to_run_the_block_without_the_lock(queue: Queue) -> None:
    holder = queue.lock("busy", ttl="30s")
    holder.acquire()
    ran = []
    refused = rf"lock 'busy' is held by {holder.owner}.*waited 0.2s"
    with pytest.raises(LockNotAcquired, match=refused), queue.lock("busy", wait="0.2s"):
        ran.append(1)
    assert ran == []


def test_with_releases_when_the_block_raises(queue: Queue) -> None:
    with pytest.raises(ZeroDivisionError), queue.lock("x"):
        1 / 0  # noqa: B018
    assert queue.lock("x").acquire().token == 2


def test_with_raises_lock_lost_when_the_lock_was_lost_in_the_block(queue: Queue) -> None:
    with pytest.raises(LockLost), queue.lock("x", ttl="0.3s"):
        wait_for(queue.lock("x").acquire, timeout=10, interval=0.05)


def test_with_keeps_the_blocks_error_when_the_lock_was_also_lost(queue: Queue) -> None:
    with pytest.raises(KeyError), queue.lock("x", ttl="0.3s"):
        wait_for(queue.lock("x").acquire, timeout=10, interval=0.05)
        raise KeyError("the block's own failure")


# -- semaphores ---------------------------------------------------------------------------


def test_semaphore_admits_limit_holders(queue: Queue) -> None:
    handles = [queue.semaphore("smtp", limit=3, ttl="30s") for _ in range(4)]
    results = [h.acquire() for h in handles]
    assert [r.acquired for r in results] == [True, True, True, False]
    assert sorted(r.slot for r in results[:3]) == [0, 1, 2]  # type: ignore[type-var]
    assert set(results[3].holders) == {h.owner for h in handles[:3]}

    assert handles[1].release()
    got = handles[3].acquire()
    assert got.slot == results[1].slot and got.token == 2  # the token is the slot's
    assert not queue.semaphore("smtp", limit=3).acquire()


def test_semaphore_slots_expire_and_renew_like_locks(queue: Queue) -> None:
    short = queue.semaphore("pool", limit=2, ttl="0.5s")
    kept = queue.semaphore("pool", limit=2, ttl="0.5s")
    short.acquire(), kept.acquire()
    deadline = time.monotonic() + 1.2
    while time.monotonic() < deadline:
        kept.renew()
        time.sleep(0.2)
    late = queue.semaphore("pool", limit=2)
    got = late.acquire()
    assert got.slot == short.slot and got.token == 2  # the slot of the one that stopped renewing
    with pytest.raises(LockLost):
        short.renew()
    assert kept.renew()


def test_semaphore_with_block(queue: Queue) -> None:
    with queue.semaphore("smtp", limit=2) as one, queue.semaphore("smtp", limit=2) as two:
        assert {one.slot, two.slot} == {0, 1}
        full = r"semaphore 'smtp' \(limit 2\) is held by"
        with pytest.raises(LockNotAcquired, match=full), queue.semaphore("smtp", limit=2):
            pass
    assert len(list_locks(queue, include_free=True)) == 2 and list_locks(queue) == []


def test_a_lock_is_the_semaphore_of_limit_one(queue: Queue) -> None:
    queue.lock("shared").acquire()
    assert not queue.semaphore("shared", limit=1).acquire()
    assert queue.semaphore("shared", limit=2).acquire().slot == 1


# -- the client's clock has no say -----------------------------------------------------------


def test_client_clock_far_ahead_does_not_expire_a_lock(queue: Queue) -> None:
    holder = queue.lock("x", ttl="1m")
    holder.acquire()
    with freeze_time("2099-01-01"):
        assert not queue.lock("x").acquire()
        assert holder.renew()
    with freeze_time("2000-01-01"):
        left = list_locks(queue)[0].expires_in
        assert left is not None and 50 < left <= 60  # the server's count, not the client's


# -- bad input: refused before anything is written ------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["", " ", "-leading", "a b", "a\n", "x" * 129, "naïve", "a;DROP", "a'b", None, 42, b"bytes"],
)
def test_bad_names_are_refused(queue: Queue, name: Any) -> None:
    with pytest.raises(ConfigError, match="bad lock name"):
        queue.lock(name)
    with pytest.raises(ConfigError, match="bad lock name"):
        queue.semaphore(name, limit=2)
    assert list_locks(queue, include_free=True) == []


@pytest.mark.parametrize("name", ["a", "x" * 128, "invoice:customer-42/2024.06_x", "0"])
def test_names_at_the_edges_are_taken(queue: Queue, name: str) -> None:
    lock = queue.lock(name)
    assert lock.acquire() and list_locks(queue)[0].name == name


@pytest.mark.parametrize(
    "ttl", [0, "0s", -1, "-5s", 0.0004, "101y", 10**12, float("nan"), True, "soon", None]
)
def test_bad_ttls_are_refused(queue: Queue, ttl: Any) -> None:
    with pytest.raises(ConfigError, match="ttl"):
        queue.lock("x", ttl=ttl)
    with pytest.raises(ConfigError, match="ttl"):
        queue.semaphore("x", limit=2, ttl=ttl)
    assert list_locks(queue, include_free=True) == []


def test_bad_renew_ttl_is_refused_and_the_lock_stays(queue: Queue) -> None:
    lock = queue.lock("x", ttl="30s")
    lock.acquire()
    with pytest.raises(ConfigError, match="ttl"):
        lock.renew(ttl=0)
    assert lock.held and list_locks(queue)[0].state == "locked"


def test_longest_ttl_is_taken(queue: Queue) -> None:
    lock = queue.lock("x", ttl="36525d")  # 100 years
    assert lock.acquire()
    assert list_locks(queue)[0].expires_in > 99 * 365 * 86400  # type: ignore[operator]


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 2.0, "3", None])
def test_bad_limits_are_refused(queue: Queue, limit: Any) -> None:
    with pytest.raises(ConfigError, match="limit"):
        queue.semaphore("x", limit=limit)


@pytest.mark.parametrize("wait", [-1, "forever", True])
def test_bad_waits_are_refused(queue: Queue, wait: Any) -> None:
    with pytest.raises(ConfigError, match="wait"):
        queue.lock("x", wait=wait)
    lock = queue.lock("x")
    with pytest.raises(ConfigError, match="wait"):
        lock.acquire(wait=wait)
    assert list_locks(queue, include_free=True) == []


def test_largest_semaphore(queue: Queue) -> None:
    handles = [queue.semaphore("big", limit=1000, ttl="1m") for _ in range(3)]
    assert [h.acquire().slot for h in handles] == [0, 1, 2]
    assert len(list_locks(queue, include_free=True)) == 1000


# -- rows written with plain SQL --------------------------------------------------------------


def _insert(queue: Queue, name: str, *, slot: int = 0, lock_by: Any = "someone", state: str = "locked",
            when: str = "future", token: int = 0) -> None:  # fmt: skip
    params = {"name": name, "slot": slot, "lock_by": lock_by, "state": state, "when": when, "token": token}
    run_query(queue, "lock_row_insert", params)


def test_row_held_until_the_end_of_time_waits_for_an_operator(queue: Queue) -> None:
    _insert(queue, "forever", lock_by=None, token=7)
    refused = queue.lock("forever").acquire()
    assert not refused and refused.retry_in is not None and refused.retry_in > 1e9
    (info,) = list_locks(queue)
    assert (info.state, info.held, info.holder, info.token) == ("locked", True, None, 7)
    assert force_release(queue, "forever") == 1
    assert queue.lock("forever").acquire().token == 8


def test_row_expired_long_ago_is_free(queue: Queue) -> None:
    _insert(queue, "ancient", state="extended", when="past", token=41)
    assert list_locks(queue)[0].state == "expired"
    assert queue.lock("ancient").acquire().token == 42


def test_row_at_the_largest_token_is_refused_with_a_clear_error(queue: Queue) -> None:
    _insert(queue, "worn", state="free", when="past", token=MAX_TOKEN)
    with pytest.raises(LockError, match="fencing token is at its largest value"):
        queue.lock("worn").acquire()
    assert list_locks(queue, include_free=True)[0].token == MAX_TOKEN


def test_slots_beyond_the_limit_do_not_count(queue: Queue) -> None:
    _insert(queue, "pool", slot=5)  # held, but no caller with limit <= 5 takes or counts slot 5
    assert queue.semaphore("pool", limit=2).acquire().slot == 0
    assert queue.lock("pool2").acquire()


def test_odd_names_and_holders_written_by_hand_are_listed(queue: Queue) -> None:
    _insert(queue, "bad name\n\x1b[31m", lock_by="evil\nholder")
    (info,) = list_locks(queue)
    assert info.name == "bad name\n\x1b[31m" and info.holder == "evil\nholder"


@pytest.mark.parametrize(
    "values",
    [{"state": "bogus"}, {"token": -1}, {"slot": -1}, {"state": None}, {"name": None}],
    ids=["state", "token", "slot", "null-state", "null-name"],
)
def test_schema_refuses_values_no_writer_makes(queue: Queue, values: dict[str, Any]) -> None:
    params = {"name": "x", "slot": 0, "lock_by": "a", "state": "locked", "when": "future", "token": 0}
    with pytest.raises(BackendError):
        run_query(queue, "lock_row_insert", {**params, **values})
    assert list_locks(queue, include_free=True) == []


ODD_TIMES = {
    # SQLite: expire_at must be the text form that sorts as time; PostgreSQL: a finite time.
    "sqlite": ["tomorrow", "2030-01-01T00:00:00Z", "2030-01-01", "now", "1e9"],
    "postgresql": ["infinity", "-infinity"],
    "mysql": ["2030-02-30 00:00:00", "tomorrow"],
}


def test_schema_refuses_odd_expiry_times(queue: Queue, backend_name: str) -> None:
    for text in ODD_TIMES[backend_name]:
        with pytest.raises(BackendError):
            run_query(queue, "lock_row_insert_expire_text", {"name": "odd", "expire_at": text})
    assert list_locks(queue, include_free=True) == []
