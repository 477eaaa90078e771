"""Cron schedules on every backend: defining them (refused before anything is written), the
tick's compare-and-set and its enqueue in one transaction, catch-up, pause/resume, sync."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.core.serializers import loads
from batchq.errors import BatchqError, ConfigError, PayloadError, TaskError
from batchq.jobs.cron import parse_cron
from batchq.jobs.schedules import SLOT_KEY, read_schedules_file
from tests.support.db import job_rows, run_query, sql

EVERY_SECOND = "* * * * * *"


def next_exec(queue: Queue, name: str) -> int:
    return int(run_query(queue, "schedule_next_exec", {"name": name})[0][0])


def make_due(queue: Queue, name: str, seconds_ago: int) -> int:
    """Put a schedule's next slot ``seconds_ago`` before the server's clock (a real slot of an
    every-second schedule); returns it."""
    at = int(queue.schedules.server_now()) - seconds_ago
    run_query(queue, "schedule_set_next_exec", {"name": name, "at": at})
    return at


def payloads(queue: Queue) -> list[Any]:
    rows = sql(queue, "SELECT payload, serializer FROM batchq_job ORDER BY id")
    return [loads(payload, serializer, queue.secret) for payload, serializer in rows]


def slots_of(queue: Queue) -> list[int]:
    return [int(datetime.fromisoformat(p[SLOT_KEY]).timestamp()) for p in payloads(queue)]


@pytest.fixture
def refusing_inserts(queue: Queue) -> Iterator[None]:
    """A trigger that fails every INSERT of a job into queue 'refused'."""
    dialect = queue.backend.dialect
    run_query(queue, "jobs_refuse_drop")
    if dialect == "postgresql":
        run_query(queue, "jobs_refuse_function")
    run_query(queue, "jobs_refuse_create")
    if dialect == "mysql":
        queue.backend.conn.commit()
    yield
    run_query(queue, "jobs_refuse_drop")


# -- defining -----------------------------------------------------------------------------------


def test_schedule_is_stored_with_its_first_slot_after_now(queue: Queue) -> None:
    created = queue.schedule(
        "digest", "0 7 * * mon-fri", "jobs:echo", tz="Europe/Berlin", payload={"list": "daily"}, queue="mail"
    )
    now = queue.schedules.server_now()
    assert created.next_exec is not None and created.next_exec.tzinfo is not None
    cron = parse_cron("0 7 * * mon-fri", "Europe/Berlin")
    assert created.next_exec.timestamp() == cron.next_after(int(now))
    assert str(created.next_exec.tzinfo) == "Europe/Berlin"
    assert (created.task, created.queue, created.payload, created.enabled) == (
        "jobs:echo",
        "mail",
        {"list": "daily"},
        True,
    )
    assert [s.name for s in queue.schedules.list()] == ["digest"]
    assert job_rows(queue) == []  # a new schedule never runs at once


def test_redefining_keeps_the_next_slot_unless_the_timing_changes(queue: Queue) -> None:
    queue.schedule("s", EVERY_SECOND, "jobs:noop")
    due = make_due(queue, "s", 30)
    queue.schedule("s", EVERY_SECOND, "jobs:echo", payload={"v": 2}, priority=5)
    assert next_exec(queue, "s") == due  # a deploy re-running schedule() loses no due slot
    stored = queue.schedules.get("s")
    assert stored is not None and (stored.task, stored.payload, stored.priority) == ("jobs:echo", {"v": 2}, 5)
    queue.schedule("s", "*/2 * * * * *", "jobs:echo")
    assert next_exec(queue, "s") > queue.schedules.server_now() - 1  # new timing: from now on


@pytest.mark.parametrize(
    ("args", "options", "error"),
    [
        (("s", "0 7 * *", "jobs:noop"), {}, ConfigError),
        (("s", "0 7 * * *", "jobs:noop"), {"tz": "Nowhere/Town"}, ConfigError),
        (("s", "0 7 * * *", "jobs:no_such_task"), {}, TaskError),
        (("s", "0 7 * * *", "os:system"), {}, TaskError),
        (("s", "0 7 * * *", "jobs:noop"), {"payload": [1, 2]}, ConfigError),
        (("s", "0 7 * * *", "jobs:noop"), {"payload": {"when": datetime(2024, 1, 1)}}, PayloadError),
        (("s", "0 7 * * *", "jobs:noop"), {"payload": {SLOT_KEY: "x"}}, ConfigError),
        (("s", "0 7 * * *", "jobs:noop"), {"catch_up": "some"}, ConfigError),
        (("s", "0 7 * * *", "jobs:noop"), {"catch_up": "all", "catch_up_limit": 0}, ConfigError),
        (("s", "0 7 * * *", "jobs:noop"), {"queue": "bad queue"}, ConfigError),
        (("s", "0 7 * * *", "jobs:noop"), {"priority": 10**6}, ConfigError),
        (("bad name", "0 7 * * *", "jobs:noop"), {}, ConfigError),
    ],
)
def test_bad_definitions_are_refused_before_anything_is_written(
    queue: Queue, args: tuple[str, str, str], options: dict[str, Any], error: type[BatchqError]
) -> None:
    with pytest.raises(error):
        queue.schedule(*args, **options)
    assert queue.schedules.list() == []


def test_pickled_payloads_are_signed_and_reach_the_job(queue: Queue) -> None:
    when = datetime(2024, 1, 1, 12, 0)
    queue.schedule("p", EVERY_SECOND, "jobs:echo", payload={"when": when}, serializer="pickle")
    make_due(queue, "p", 0)
    assert len(queue.tick().enqueued) == 1
    (payload,) = payloads(queue)
    assert payload["when"] == when and payload["batchq_schedule"] == "p"


# -- ticking ----------------------------------------------------------------------------------


def test_tick_enqueues_one_job_for_the_due_slot_with_its_slot_time(queue: Queue) -> None:
    queue.schedule("s", EVERY_SECOND, "jobs:echo", payload={"k": "v"}, tz="Europe/Berlin", queue="cron")
    slot = make_due(queue, "s", 0)
    report = queue.tick()
    assert [(j.schedule, int(j.slot.timestamp())) for j in report.enqueued] == [("s", slot)]
    (job,) = job_rows(queue)
    assert (job["task"], job["queue"], job["status"]) == ("jobs:echo", "cron", "ready")
    (payload,) = payloads(queue)
    assert payload["k"] == "v" and payload["batchq_schedule"] == "s"
    assert datetime.fromisoformat(payload[SLOT_KEY]).timestamp() == slot
    assert str(datetime.fromisoformat(payload[SLOT_KEY]).utcoffset()) in ("1:00:00", "2:00:00")  # Berlin
    stored = queue.schedules.get("s")
    assert stored is not None and stored.last_job_id == job["id"]
    assert stored.last_slot is not None and stored.last_slot.timestamp() == slot
    assert stored.exec_by is not None and ":" in stored.exec_by
    assert next_exec(queue, "s") > slot
    queue.tick()  # the next slots, maybe; never this one again
    assert slots_of(queue).count(slot) == 1


def test_a_ticker_that_saw_a_slot_another_took_enqueues_nothing(queue: Queue, db_url: str) -> None:
    """The compare-and-set: a second host read the same due row, then lost the UPDATE."""
    queue.schedule("s", "0 * * * *", "jobs:noop")
    cron = parse_cron("0 * * * *")
    slot = cron.latest_at_or_before(int(queue.schedules.server_now()))
    assert slot is not None
    run_query(queue, "schedule_set_next_exec", {"name": "s", "at": slot})
    other = Queue(db_url, task_modules=["jobs"], secret=b"test-secret")
    try:
        (stale,) = other.backend.fetchall("schedules_due")
        assert len(queue.tick().enqueued) == 1
        from batchq.jobs.schedules import TickReport

        report = TickReport()
        other.schedules._fire(stale, "other:1", report)
        assert (report.enqueued, report.taken) == ([], 1)
    finally:
        other.close()
    assert len(job_rows(queue)) == 1


def test_a_failed_enqueue_rolls_back_the_advance(queue: Queue, refusing_inserts: None) -> None:
    """The job's INSERT fails after the compare-and-set matched: both roll back, the schedule
    stays due, and the next tick enqueues that very slot."""
    queue.schedule("s", "0 * * * *", "jobs:noop", queue="refused")
    slot = parse_cron("0 * * * *").latest_at_or_before(int(queue.schedules.server_now()))
    run_query(queue, "schedule_set_next_exec", {"name": "s", "at": slot})
    report = queue.tick()
    assert report.enqueued == [] and [name for name, _ in report.failed] == ["s"]
    assert "refused by a test trigger" in report.failed[0][1]
    assert next_exec(queue, "s") == slot
    assert job_rows(queue) == []
    stored = queue.schedules.get("s")
    assert stored is not None and stored.last_job_id is None
    queue.schedule("s", "0 * * * *", "jobs:noop", queue="default")  # fixed: same timing, same slot
    assert [int(j.slot.timestamp()) for j in queue.tick().enqueued] == [slot]


def test_one_bad_schedule_does_not_stop_the_others(queue: Queue) -> None:
    queue.schedule("bad", EVERY_SECOND, "jobs:noop")
    queue.schedule("good", EVERY_SECOND, "jobs:noop")
    make_due(queue, "bad", 0)
    make_due(queue, "good", 0)
    sql(queue, "UPDATE batchq_schedule SET task = 'os:system' WHERE name = 'bad'")  # by hand
    report = queue.tick()
    assert [j.schedule for j in report.enqueued] == ["good"]
    assert report.failed[0][0] == "bad" and "not allowed" in report.failed[0][1]


# -- catch-up ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("catch_up", "limit", "expected"),
    [("latest", 100, [0]), ("all", 100, list(range(-600, 1))[-100:]), ("all", 5, [-4, -3, -2, -1, 0])],
)
def test_catch_up_after_ten_minutes_without_ticks(
    queue: Queue, catch_up: str, limit: int, expected: list[int]
) -> None:
    queue.schedule("s", EVERY_SECOND, "jobs:noop", catch_up=catch_up, catch_up_limit=limit)
    due = make_due(queue, "s", 600)
    report = queue.tick()
    latest = int(report.enqueued[-1].slot.timestamp())
    assert latest >= due + 600
    assert slots_of(queue) == [latest + offset for offset in expected]
    assert next_exec(queue, "s") > latest


def test_catch_up_none_skips_a_missed_slot_and_runs_one_on_time(queue: Queue) -> None:
    yearly = "0 0 1 1 *"  # its latest slot, this New Year, is long past (unless run at New Year)
    queue.schedule("s", yearly, "jobs:noop", catch_up="none")
    now = int(queue.schedules.server_now())
    new_year = parse_cron(yearly).latest_at_or_before(now)
    run_query(queue, "schedule_set_next_exec", {"name": "s", "at": new_year})
    report = queue.tick()
    assert (report.enqueued, report.skipped) == ([], ["s"])
    assert next_exec(queue, "s") == parse_cron(yearly).next_after(now)
    # An every-second schedule ten minutes behind: its latest slot (this second) is on time.
    queue.schedule("t", EVERY_SECOND, "jobs:noop", catch_up="none")
    make_due(queue, "t", 600)
    assert len(queue.tick().enqueued) == 1


# -- pause, resume, remove --------------------------------------------------------------------


def test_pause_and_resume(queue: Queue) -> None:
    queue.schedule("s", EVERY_SECOND, "jobs:noop")
    due = make_due(queue, "s", 60)
    assert queue.schedules.pause("s") is True
    assert queue.tick().enqueued == []
    stored = queue.schedules.get("s")
    assert stored is not None and stored.enabled is False
    queue.schedule("s", EVERY_SECOND, "jobs:noop")  # a deploy re-running schedule() keeps it paused
    assert queue.schedules.get("s").enabled is False  # type: ignore[union-attr]
    assert queue.schedules.resume("s") is True
    assert queue.schedules.resume("s") is False  # not paused
    assert next_exec(queue, "s") > due + 59  # the slots passed while paused are skipped
    assert queue.schedules.pause("nope") is False and queue.schedules.resume("nope") is False


def test_remove(queue: Queue) -> None:
    queue.schedule("s", EVERY_SECOND, "jobs:noop")
    assert queue.schedules.remove("s") is True
    assert queue.schedules.remove("s") is False
    assert queue.schedules.list() == []


# -- sync -------------------------------------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_sync_creates_updates_and_prunes(queue: Queue, tmp_path: Path) -> None:
    queue.schedule("old", "@daily", "jobs:noop")
    queue.schedule("kept", "@hourly", "jobs:noop")
    first = _write(
        tmp_path / "schedules.toml",
        """
[schedules.digest]
cron = "0 7 * * mon-fri"
task = "jobs:echo"
tz = "Europe/Berlin"
queue = "mail"
payload = { list = "daily" }
catch_up = "none"

[schedules.kept]
cron = "@hourly"
task = "jobs:noop"
""",
    )
    report = queue.schedules.sync_file(first)
    assert (report.created, report.updated, report.unchanged, report.removed) == (
        ["digest"],
        [],
        ["kept"],
        [],
    )
    assert [s.name for s in queue.schedules.list()] == ["digest", "kept", "old"]
    again = queue.schedules.sync_file(first, prune=True)
    assert (again.created, again.updated, again.unchanged, again.removed) == (
        [],
        [],
        ["digest", "kept"],
        ["old"],
    )
    digest = queue.schedules.get("digest")
    assert digest is not None and (digest.tz, digest.queue, digest.payload, digest.catch_up) == (
        "Europe/Berlin",
        "mail",
        {"list": "daily"},
        "none",
    )
    changed = _write(tmp_path / "changed.toml", first.read_text().replace('"daily"', '"weekly"'))
    assert queue.schedules.sync_file(changed).updated == ["digest"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[schedules.a]\ncron = "@daily"\n', "'task' is missing"),
        ('[schedules.a]\ncron = "@daily"\ntask = "jobs:noop"\ncolour = "red"\n', "unknown setting 'colour'"),
        ('[schedules.a]\ncron = "0 7 * *"\ntask = "jobs:noop"\n', "schedule 'a': bad cron expression"),
        ('[schedules.a]\ncron = "@daily"\ntask = "jobs:nope"\n', "schedule 'a'"),
        ('[a]\ncron = "@daily"\n', "unknown top-level key 'a'"),
        ("[schedules.a\n", "not valid TOML"),
    ],
)
def test_sync_refuses_a_bad_file_before_writing_anything(
    queue: Queue, tmp_path: Path, text: str, message: str
) -> None:
    good = '[schedules.good]\ncron = "@daily"\ntask = "jobs:noop"\n\n'
    path = _write(tmp_path / "s.toml", good + text)
    with pytest.raises(BatchqError, match=message):
        queue.schedules.sync_file(path, prune=True)
    assert queue.schedules.list() == []


def test_schedules_file_round_trip(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.toml", '[schedules.a]\ncron = "@daily"\ntask = "jobs:noop"\n')
    assert read_schedules_file(path) == {"a": {"cron": "@daily", "task": "jobs:noop"}}
    with pytest.raises(ConfigError, match="cannot read"):
        read_schedules_file(tmp_path / "missing.toml")
    assert json.dumps(read_schedules_file(path))  # plain data
