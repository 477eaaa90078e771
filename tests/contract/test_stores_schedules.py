"""The schedule store's contract (batchq.stores.schedules): each method called directly, on every
dialect. Schedules as users define and tick them are tested in test_schedules.py."""

from __future__ import annotations

import time
from typing import Any

from batchq import Queue
from batchq.stores.schedules import ScheduleStore


def definition(name: str = "nightly", **changes: Any) -> dict[str, Any]:
    return {
        "name": name,
        "cron": "0 3 * * *",
        "tz": "UTC",
        "task": "jobs:noop",
        "payload": None,
        "serializer": "json",
        "queue": "default",
        "priority": 0,
        "max_errors": 10,
        "catch_up": "latest",
        "catch_up_limit": 100,
        **changes,
    }


def store(queue: Queue) -> ScheduleStore:
    return queue.backend.stores.schedules


def test_server_now_is_the_servers_clock_in_epoch_seconds(queue: Queue) -> None:
    assert abs(store(queue).server_now() - time.time()) < 300  # another clock, not another epoch


def test_upsert_then_all(queue: Queue) -> None:
    schedules = store(queue)
    assert schedules.all() == []
    schedules.upsert(definition(), 2_000_000_000)
    schedules.upsert(definition("hourly", cron="0 * * * *"), 2_000_000_000)
    rows = schedules.all()
    assert [row["name"] for row in rows] == ["hourly", "nightly"]
    assert rows[1]["cron"] == "0 3 * * *" and rows[1]["enabled"] == 1
    assert int(rows[1]["next_exec"]) == 2_000_000_000


def test_an_update_keeps_next_exec_unless_cron_or_tz_change(queue: Queue) -> None:
    schedules = store(queue)
    schedules.upsert(definition(), 2_000_000_000)
    schedules.upsert(definition(priority=5), 2_100_000_000)
    (row,) = schedules.all()
    assert (row["priority"], int(row["next_exec"])) == (5, 2_000_000_000)
    schedules.upsert(definition(cron="0 4 * * *"), 2_100_000_000)
    assert int(schedules.all()[0]["next_exec"]) == 2_100_000_000


def test_due_lists_enabled_schedules_whose_slot_has_come(queue: Queue) -> None:
    schedules = store(queue)
    now = int(schedules.server_now())
    schedules.upsert(definition("past"), now - 60)
    schedules.upsert(definition("future"), now + 3600)
    schedules.upsert(definition("paused"), now - 60)
    schedules.pause("paused")
    (due,) = schedules.due()
    assert due["name"] == "past" and float(due["now"]) >= now - 1


def test_advance_is_a_compare_and_set(queue: Queue) -> None:
    schedules = store(queue)
    now = int(schedules.server_now())
    schedules.upsert(definition(), now - 60)
    assert schedules.advance("nightly", now - 61, now + 60, "host:1") is False  # not the slot seen
    assert schedules.advance("nightly", now - 60, now + 60, "host:1") is True
    assert schedules.advance("nightly", now - 60, now + 120, "host:2") is False  # taken already
    (row,) = schedules.all()
    assert (int(row["next_exec"]), row["exec_by"]) == (now + 60, "host:1")
    schedules.ran("nightly", now - 60, 42)
    (row,) = schedules.all()
    assert (row["last_job_id"], int(row["last_slot"])) == (42, now - 60)


def test_pause_resume_delete(queue: Queue) -> None:
    schedules = store(queue)
    schedules.upsert(definition(), 2_000_000_000)
    assert schedules.resume("nightly", 2_100_000_000) is False  # not paused
    assert schedules.pause("nightly") is True
    assert schedules.all()[0]["enabled"] == 0
    assert schedules.resume("nightly", 2_100_000_000) is True
    (row,) = schedules.all()
    assert (row["enabled"], int(row["next_exec"])) == (1, 2_100_000_000)
    assert schedules.pause("missing") is False
    assert schedules.delete("nightly") is True
    assert schedules.delete("nightly") is False
    assert schedules.all() == []
