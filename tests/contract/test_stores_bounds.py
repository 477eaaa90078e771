"""The bound store's contract (batchq.stores.bounds): each method called directly, on every
dialect. Bounded enqueues are tested in test_bounded_jobs.py."""

from __future__ import annotations

from batchq import Queue
from batchq.stores.bounds import Bound, BoundStore
from tests.support.db import job_rows


def store(queue: Queue) -> BoundStore:
    return queue.backend.stores.bounds


def test_set_read_and_lift_a_bound(queue: Queue) -> None:
    bounds = store(queue)
    assert bounds.bound("q") is None
    bounds.set("q", 3, "reject")
    assert bounds.bound("q") == Bound(3, "reject")
    bounds.set("q", 5, "drop_oldest")
    assert bounds.bound("q") == Bound(5, "drop_oldest")
    with queue.backend.transaction():
        assert bounds.lock("q") == Bound(5, "drop_oldest")
    bounds.set("q", None, None)
    assert bounds.bound("q") is None
    assert bounds.bound("other") is None


def test_waiting_counts_ready_and_scheduled_jobs_of_the_queue(queue: Queue) -> None:
    bounds = store(queue)
    assert bounds.waiting("q") == 0
    queue.enqueue("jobs:noop", queue="q")
    queue.enqueue("jobs:noop", queue="q", delay=3600)
    queue.enqueue("jobs:noop", queue="other")
    assert bounds.waiting("q") == 2


def test_drop_fails_the_oldest_waiting_jobs(queue: Queue) -> None:
    bounds = store(queue)
    ids = [int(queue.enqueue("jobs:noop", queue="q")) for _ in range(4)]
    assert bounds.oldest_waiting("q", 2) == ids[:2]
    assert bounds.drop(ids[:2], "dropped: the queue is full", "fp-1") == 2
    assert bounds.drop(ids[:2], "dropped again", "fp-1") == 0  # no longer waiting
    assert bounds.waiting("q") == 2
    failed = {row["id"]: row for row in job_rows(queue) if row["status"] == "failed"}
    assert sorted(failed) == ids[:2]
    assert failed[ids[0]]["last_error"] == "dropped: the queue is full"
