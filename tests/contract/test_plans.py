"""The claim walks its index: the next due job is found without reading the backlog."""

from __future__ import annotations

from batchq import Queue


def test_future_dated_jobs_at_a_higher_priority_are_not_walked(queue: Queue) -> None:
    """Delayed jobs at priority 5 and nothing due there: the claim seeks to the next level."""
    queue.enqueue_many("jobs:noop", list(range(2000)), priority=5, delay=3600)
    due = queue.enqueue("jobs:noop", "due", priority=0)
    job = queue.backend.claim("default", "w:1", "t" * 32)
    assert job is not None and job["id"] == due
    assert queue.backend.claim("default", "w:1", "u" * 32) is None  # nothing due at any level
