"""The claim walks its index: the next due job is found without reading the backlog."""

from __future__ import annotations

import time

from batchq import Queue


def test_future_dated_jobs_at_a_higher_priority_are_not_walked(queue: Queue) -> None:
    """Delayed jobs at priority 5 are 'scheduled', outside the claim's range of 'ready' rows."""
    queue.enqueue_many("jobs:noop", list(range(2000)), priority=5, delay=3600)
    due = queue.enqueue("jobs:noop", "due", priority=0)
    [job] = queue.backend.stores.jobs.claim("default", "w:1", "t" * 32).jobs
    assert job.id == due
    assert queue.backend.stores.jobs.claim("default", "w:1", "u" * 32).jobs == []  # nothing due at any level
    assert queue.backend.stores.jobs.promote_due() == 0  # and nothing to promote


def test_promotion_makes_due_scheduled_jobs_claimable(queue: Queue) -> None:
    late = queue.enqueue("jobs:noop", "late", delay=0.05)
    assert queue.backend.stores.jobs.claim("default", "w:1", "t" * 32).jobs == []  # scheduled, not ready yet
    time.sleep(0.1)
    assert queue.backend.stores.jobs.promote_due() == 1
    [job] = queue.backend.stores.jobs.claim("default", "w:1", "t" * 32).jobs
    assert job.id == late
