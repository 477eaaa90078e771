"""`batchq locks` and `batchq locks release NAME --force`, as an operator runs them."""

from __future__ import annotations

import json
import time

import pytest

from batchq import LockLost, Queue
from tests.support.cli import invoke_batchq
from tests.support.db import run_query
from tests.support.processes import assert_one_line_error

HEADER = ["name", "slot", "holder", "state", "expires", "in", "token"]


def test_no_locks_prints_the_header_only(queue: Queue, db_url: str) -> None:
    result = invoke_batchq(db_url, "locks")
    assert (result.returncode, result.stderr) == (0, "")
    assert [line.split() for line in result.stdout.splitlines()] == [HEADER]
    assert json.loads(invoke_batchq(db_url, "locks", "--json").stdout) == []


def minutes_seconds(text: str) -> int:
    """'4m59s' -> 299, as `batchq locks` writes what is left of a lock's time."""
    minutes, _, seconds = text.rstrip("s").partition("m")
    return int(minutes) * 60 + int(seconds)


def test_lists_held_locks_and_semaphore_slots(queue: Queue, db_url: str) -> None:
    started = time.monotonic()
    lock = queue.lock("nightly-report", ttl="5m")
    lock.acquire()
    slots = [queue.semaphore("smtp", limit=3, ttl="90s") for _ in range(2)]
    for slot in slots:
        slot.acquire()
    free = queue.lock("done")
    free.acquire(), free.release()

    result = invoke_batchq(db_url, "locks")
    took = time.monotonic() - started  # what is left shrinks by this on a slow machine
    assert result.returncode == 0 and result.stderr == ""
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows[0] == HEADER
    assert [row[:4] + row[5:] for row in rows[1:]] == [
        ["nightly-report", "0", lock.owner, "locked", "1"],
        ["smtp", "0", slots[0].owner, "locked", "1"],
        ["smtp", "1", slots[1].owner, "locked", "1"],
    ]  # the free lock and slot are left out
    for row, ttl in zip(rows[1:], (300, 90, 90)):
        assert ttl - took - 1 <= minutes_seconds(row[4]) < ttl, row

    everything = [line.split() for line in invoke_batchq(db_url, "locks", "--all").stdout.splitlines()]
    assert ["done", "0", "-", "free", "-", "1"] in everything
    assert ["smtp", "2", "-", "free", "-", "0"] in everything


def test_json_has_every_field(queue: Queue, db_url: str) -> None:
    lock = queue.lock("nightly-report", ttl="5m")
    lock.acquire()
    lock.renew()
    (row,) = json.loads(invoke_batchq(db_url, "locks", "--json").stdout)
    assert row["name"] == "nightly-report" and row["slot"] == 0
    assert (row["holder"], row["state"], row["held"], row["token"]) == (lock.owner, "extended", True, 1)
    assert 290 < row["expires_in"] <= 300
    assert row["expire_at"] and row["taken_at"] and row["renewed_at"]
    assert {
        info["name"] for info in json.loads(invoke_batchq(db_url, "locks", "--all", "--json").stdout)
    } == {"nightly-report"}


def test_force_release(queue: Queue, db_url: str) -> None:
    lock = queue.lock("nightly-report", ttl="5m")
    lock.acquire()

    refused = invoke_batchq(db_url, "locks", "release", "nightly-report")
    assert refused.returncode == 2 and "--force" in refused.stderr and "Traceback" not in refused.stderr
    assert lock.renew()  # untouched

    result = invoke_batchq(db_url, "locks", "release", "nightly-report", "--force")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"released nightly-report slot 0 (token 1, held by {lock.owner})\n"
    with pytest.raises(LockLost, match="released by someone else"):
        lock.renew()
    assert queue.lock("nightly-report").acquire().token == 2


def test_force_release_of_a_free_or_unknown_lock_exits_1(queue: Queue, db_url: str) -> None:
    result = invoke_batchq(db_url, "locks", "release", "nobody-has-it", "--force")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "batchq: error: lock 'nobody-has-it' is not held: nothing released (see `batchq locks --all`)\n"
    )


def test_force_release_of_a_bad_name_is_one_line(queue: Queue, db_url: str) -> None:
    assert_one_line_error(
        invoke_batchq(db_url, "locks", "release", "a b", "--force"), "bad lock name", status=2
    )


def test_rows_written_by_hand_print_on_one_line_each(queue: Queue, db_url: str) -> None:
    params = {"slot": 0, "state": "locked", "when": "future", "token": 3}
    run_query(queue, "lock_row_insert", {**params, "name": "evil\n\x1b[31mname", "lock_by": "two\nlines"})
    run_query(queue, "lock_row_insert", {**params, "name": "nobody", "lock_by": None})
    result = invoke_batchq(db_url, "locks")
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and len(lines) == 3 and "\x1b" not in result.stdout
    assert lines[1].split()[:3] == ["'evil\\n\\x1b[31mname'", "0", "'two\\nlines'"]
    assert lines[2].split()[:4] == ["nobody", "0", "(unknown)", "locked"]  # held, lock_by NULL
    released = invoke_batchq(db_url, "locks", "release", "nobody", "--force")
    assert released.stdout == "released nobody slot 0 (token 3, held by (unknown))\n"


def test_locks_without_the_schema_says_init_db(tmp_path: object) -> None:
    assert_one_line_error(invoke_batchq(f"sqlite:///{tmp_path}/none.db", "locks"), "batchq init-db")


def test_expired_holding_is_listed_as_expired_and_can_be_released(queue: Queue, db_url: str) -> None:
    lock = queue.lock("lapsed", ttl="0.3s")
    lock.acquire()
    time.sleep(0.6)
    rows = [line.split() for line in invoke_batchq(db_url, "locks").stdout.splitlines()]
    assert rows[1] == ["lapsed", "0", "-", "expired", "-", "1"]
    result = invoke_batchq(db_url, "locks", "release", "lapsed", "--force")
    assert result.stdout == f"released lapsed slot 0 (token 1, expired, last held by {lock.owner})\n"
    assert invoke_batchq(db_url, "locks").stdout.count("\n") == 1
