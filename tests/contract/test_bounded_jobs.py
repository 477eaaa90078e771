"""Bounded job queues (Queue.configure), on every backend: at most max_length waiting jobs."""

from __future__ import annotations

import re
import time

import pytest

from batchq import ConfigError, Queue, QueueFull
from batchq.runtime.sweeps import failure_groups, gc_error
from batchq.runtime.worker import RunOptions, Worker
from tests.support.cli import invoke_batchq
from tests.support.db import app_connection, job_rows, run_query, sql

Q = "bounded"


def test_reject_raises_and_writes_nothing(db_url: str, queue: Queue) -> None:
    queue.configure(Q, max_length=2, overflow="reject")
    queue.enqueue("jobs:noop", queue=Q)
    queue.enqueue("jobs:noop", queue=Q, delay=60)  # delayed jobs wait too
    with pytest.raises(QueueFull, match="is full .*overflow='reject'"):
        queue.enqueue("jobs:noop", queue=Q)
    with pytest.raises(QueueFull, match="at most 2 at a time"):
        queue.enqueue_many("jobs:noop", [1, 2, 3], queue=Q)
    app = app_connection(db_url)
    with pytest.raises(QueueFull):
        queue.enqueue("jobs:noop", queue=Q, conn=app)
    queue.enqueue("jobs:noop", queue="default", conn=app)  # the caller's transaction goes on
    app.commit()
    app.close()
    assert sorted(row["queue"] for row in job_rows(queue)) == ["bounded", "bounded", "default"]

    assert Worker(queue, RunOptions(queues=[Q])).run().job_ids  # one runs and is gone: room for one
    assert queue.enqueue_many("jobs:noop", [1], queue=Q) == 1
    with pytest.raises(QueueFull):
        queue.enqueue("jobs:noop", queue=Q)


def test_drop_oldest_fails_the_oldest_waiting_job_for_gc_error(queue: Queue) -> None:
    queue.configure(Q, max_length=2)
    first, second = queue.enqueue("jobs:noop", queue=Q), queue.enqueue("jobs:noop", queue=Q)
    sql(queue, f"UPDATE batchq_job SET status = 'processing' WHERE id = {first}")  # running: never dropped
    third = queue.enqueue("jobs:noop", queue=Q)
    fourth = queue.enqueue("jobs:noop", queue=Q)
    statuses = {row["id"]: (row["status"], row["last_error"]) for row in job_rows(queue)}
    assert statuses[first] == ("processing", None)
    assert statuses[third][0] == statuses[fourth][0] == "ready"
    assert statuses[second][0] == "failed"
    assert "dropped to make room: queue 'bounded' holds at most 2 waiting jobs" in statuses[second][1]

    queue.enqueue_many("jobs:noop", [1, 2], queue=Q)  # both older waiting ones go
    failed = gc_error(queue, queues=[Q])
    assert sorted(job.id for job in failed) == sorted([second, third, fourth])
    [group] = failure_groups(queue, [Q])  # one cause, one group
    assert group.count == 3 and group.sample.startswith("QueueFull: dropped to make room")
    assert sum(1 for row in job_rows(queue) if row["status"] == "ready") == 2


def test_gc_error_words_dropped_jobs_as_dropped(queue: Queue, db_url: str) -> None:
    """A dropped job never ran out of tries: gc-error says it was dropped, not '(0 errors)'."""
    queue.configure(Q, max_length=1)
    dropped = queue.enqueue("jobs:noop", queue=Q)
    queue.enqueue("jobs:noop", queue=Q)
    failed = queue.enqueue("jobs:fail", "x", max_errors=1)
    Worker(queue, RunOptions(queues=("default",), backoff_base=0)).run()
    report = invoke_batchq(db_url, "gc-error")
    assert report.returncode == 3, report.stderr
    lines = report.stdout.splitlines()
    assert lines[0] == (
        "batchq gc-error: 1 job out of tries, 1 job dropped from full queues (drop_oldest), 2 causes"
    )
    assert f"    #{dropped} {Q} jobs:noop (dropped while waiting): QueueFull: dropped to make room" in (
        "\n".join(lines)
    )
    assert f"    #{failed} default jobs:fail (1 error): ValueError: boom" in report.stdout
    assert "(0 errors)" not in report.stdout
    [dropped_job] = [job for job in gc_error(queue) if job.dropped]
    assert dropped_job.id == dropped
    only_dropped = invoke_batchq(db_url, "gc-error", "--queue", Q)
    assert only_dropped.stdout.startswith(
        "batchq gc-error: 1 job dropped from full queues (drop_oldest), 1 cause"
    )


def test_a_held_unique_key_drops_nothing(queue: Queue) -> None:
    queue.configure(Q, max_length=1)
    held = queue.enqueue("jobs:noop", queue=Q, unique_key="k")
    again = queue.enqueue("jobs:noop", queue=Q, unique_key="k")
    assert again == held and not again.created
    assert [row["status"] for row in job_rows(queue)] == ["ready"]
    other = queue.enqueue("jobs:noop", queue=Q, unique_key="other")
    assert other.created
    assert [(row["id"], row["status"]) for row in job_rows(queue)] == [(held, "failed"), (other, "ready")]


def test_configure_lowers_lifts_and_checks(queue: Queue) -> None:
    queue.enqueue_many("jobs:noop", list(range(5)), queue=Q)
    assert queue.configure(Q, max_length=2) == 3  # drop_oldest: fits the new bound at once
    assert [row["status"] for row in job_rows(queue)] == ["failed"] * 3 + ["ready"] * 2
    assert queue.configure(Q, max_length=1, overflow="reject") == 0  # reject keeps them
    with pytest.raises(QueueFull):
        queue.enqueue("jobs:noop", queue=Q)
    queue.pause(Q)  # pausing keeps the bound, and configuring keeps the pause
    assert queue.configure(Q, max_length=None) == 0
    assert queue.paused_queues() == [Q]
    assert queue.enqueue_many("jobs:noop", list(range(10)), queue=Q) == 10
    for bad in ({"max_length": 0}, {"max_length": "3"}, {"max_length": 3, "overflow": "block"}):
        with pytest.raises(ConfigError, match="max_length|overflow"):
            queue.configure(Q, **bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs a max_length"):
        queue.configure(Q, max_length=None, overflow="reject")


def test_other_producers_apply_a_new_bound_within_a_second(db_url: str, queue: Queue) -> None:
    producer = Queue(db_url, task_modules=["jobs"])
    producer.enqueue("jobs:noop", queue=Q)  # sees the queue unbounded, and remembers it
    queue.configure(Q, max_length=1, overflow="reject")
    time.sleep(1.1)
    with pytest.raises(QueueFull):
        producer.enqueue("jobs:noop", queue=Q)
    producer.close()


def test_bounds_written_by_hand_are_read_safely(queue: Queue) -> None:
    """An unknown policy drops oldest; a bound that is no whole number refuses, naming it."""
    queue.configure(Q, max_length=1)
    sql(queue, "UPDATE batchq_queue SET overflow = 'bogus'")
    first = queue.enqueue("jobs:noop", queue=Q)
    queue.enqueue("jobs:noop", queue=Q)
    assert [row["status"] for row in job_rows(queue) if row["id"] == first] == ["failed"]
    sql(queue, "UPDATE batchq_queue SET max_length = 0")
    with pytest.raises(QueueFull, match="max_length 0"):
        queue.enqueue("jobs:noop", queue=Q)


# -- the bound applies to every way a job is written: cron ticks, gc-error --requeue ----------

EVERY_SECOND = "* * * * * *"


def _due_for(queue: Queue, seconds: int) -> int:
    """An every-second, catch-up-all schedule into Q whose next slot was ``seconds`` ago."""
    queue.schedule("pulse", EVERY_SECOND, "jobs:noop", queue=Q, catch_up="all")
    at = int(queue.schedules.server_now()) - seconds
    run_query(queue, "schedule_set_next_exec", {"name": "pulse", "at": at})
    return at


def _waiting(queue: Queue) -> list[dict[str, object]]:
    return [row for row in job_rows(queue) if row["status"] in ("ready", "scheduled", "blocked")]


def test_a_tick_into_a_full_reject_queue_writes_what_fits_and_reports_the_rest(queue: Queue) -> None:
    queue.configure(Q, max_length=3, overflow="reject")
    due = _due_for(queue, 59)  # 60 due slots, or a few more by the time the tick reads the clock
    report = queue.tick()
    assert [int(job.slot.timestamp()) for job in report.enqueued] == [due, due + 1, due + 2]  # the oldest
    [(name, why)] = report.refused
    assert name == "pulse"
    refused, total = map(int, re.match(r"(\d+) of (\d+) ", why).groups())  # type: ignore[union-attr]
    assert total >= 60 and refused == total - 3
    assert (
        "due slots not enqueued: queue 'bounded' is full (max_length 3 waiting jobs, overflow='reject')"
        in why
    )
    assert len(_waiting(queue)) == 3
    schedule = queue.schedules.get("pulse")
    assert schedule is not None and schedule.next_exec is not None
    assert schedule.next_exec.timestamp() > due + 59  # moved on: refused slots are not retried
    assert schedule.last_job_id == report.enqueued[-1].job_id
    with pytest.raises(QueueFull):
        queue.enqueue("jobs:noop", queue=Q)
    time.sleep(1.1)  # the next slot comes due: still refused, the queue still full
    assert queue.tick().refused and len(_waiting(queue)) == 3


def test_a_tick_into_a_drop_oldest_queue_keeps_the_newest_and_fails_the_rest(queue: Queue) -> None:
    queue.configure(Q, max_length=2)
    before = queue.enqueue("jobs:noop", queue=Q)
    due = _due_for(queue, 9)  # 10 due slots (or a few more)
    report = queue.tick()
    assert not report.refused and len(report.enqueued) >= 10
    waiting = _waiting(queue)
    assert [row["id"] for row in waiting] == [job.job_id for job in report.enqueued[-2:]]  # the newest two
    failed = {row["id"]: row["last_error"] for row in job_rows(queue) if row["status"] == "failed"}
    assert sorted(failed) == sorted([before] + [job.job_id for job in report.enqueued[:-2]])
    assert all("dropped to make room: queue 'bounded' holds at most 2" in str(e) for e in failed.values())
    assert int(report.enqueued[0].slot.timestamp()) == due


def test_gc_error_requeue_respects_the_bound(queue: Queue) -> None:
    queue.configure(Q, max_length=1, overflow="reject")
    failed = queue.enqueue("jobs:noop", queue=Q)
    sql(queue, f"UPDATE batchq_job SET status = 'failed', error_count = 10 WHERE id = {failed}")
    waiting = queue.enqueue("jobs:noop", queue=Q)
    [refused] = gc_error(queue, "requeue", queues=[Q])  # full: it stays failed, and says why
    assert (refused.id, refused.status) == (failed, "failed")
    assert refused.queue_full is not None and "queue 'bounded' is full" in refused.queue_full
    assert {row["id"]: row["status"] for row in job_rows(queue)} == {failed: "failed", waiting: "ready"}

    queue.configure(Q, max_length=1, overflow="drop_oldest")  # room made as an enqueue makes it
    [requeued] = gc_error(queue, "requeue", ids=[failed])
    assert (requeued.status, requeued.queue_full) == ("ready", None)
    statuses = {row["id"]: row["status"] for row in job_rows(queue)}
    assert statuses == {failed: "ready", waiting: "failed"}
