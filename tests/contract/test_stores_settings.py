"""The settings store's contract (batchq.stores.settings), on every dialect."""

from __future__ import annotations

from batchq import Queue
from batchq.stores.settings import JobQueueSettings


def test_job_queues_reads_what_the_queues_rows_hold(queue: Queue) -> None:
    settings = queue.backend.stores.settings
    assert settings.job_queues() == {}
    queue.pause("paused-q")
    queue.backend.stores.bounds.set("bounded-q", 10, "reject")
    found = settings.job_queues()
    assert found == {
        "paused-q": JobQueueSettings("paused-q", paused=True),
        "bounded-q": JobQueueSettings("bounded-q", max_length=10, overflow="reject"),
    }
    assert settings.job_queues("paused-q") == {"paused-q": found["paused-q"]}
    assert settings.job_queues("nothing-set") == {}
