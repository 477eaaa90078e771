"""Per-key concurrency (issue 10): a job with a concurrency key waits as 'blocked' until its key
has a free slot, and only then becomes ready; every backend, real servers."""

from __future__ import annotations

import pytest

from batchq import ConfigError, Queue
from batchq.runtime.sweeps import gc_error
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import job_rows, run_query, sql


def statuses(queue: Queue) -> dict[int, str]:
    return {row["id"]: row["status"] for row in job_rows(queue)}


def claim_one(queue: Queue) -> None:
    """Claim a job and leave it processing, as a worker in the middle of running it."""
    claim = queue.backend.stores.jobs.claim("default", "host:1:00000000", "t" * 32)
    assert len(claim.jobs) == 1


def test_keyed_jobs_wait_blocked_and_are_admitted_up_to_their_limit(queue: Queue) -> None:
    one = [queue.enqueue("jobs:noop", {"i": i}, concurrency_key="customer:1") for i in range(3)]
    two = [
        queue.enqueue("jobs:noop", {"i": i}, concurrency_key="customer:2", concurrency_limit=2)
        for i in range(3)
    ]
    free = queue.enqueue("jobs:noop", {"i": 0})
    assert set(statuses(queue).values()) == {"blocked", "ready"}
    assert statuses(queue)[free] == "ready"  # a job without a key never waits for a slot
    assert queue.backend.stores.jobs.unblock_due() == 3
    assert [statuses(queue)[i] for i in one] == ["ready", "blocked", "blocked"]  # oldest first
    assert [statuses(queue)[i] for i in two] == ["ready", "ready", "blocked"]
    assert queue.backend.stores.jobs.unblock_due() == 0  # the ready ones hold their slots
    [stats] = queue.stats()
    assert (stats.ready, stats.blocked) == (3 + 1, 2 + 1)


def test_a_running_job_holds_its_slot_until_it_ends(queue: Queue) -> None:
    first = queue.enqueue("jobs:noop", concurrency_key="k")
    second = queue.enqueue("jobs:noop", concurrency_key="k")
    queue.backend.stores.jobs.unblock_due()
    claim_one(queue)
    assert statuses(queue) == {first: "processing", second: "blocked"}
    assert queue.backend.stores.jobs.unblock_due() == 0
    sql(queue, f"DELETE FROM batchq_job WHERE id = {first}")  # it succeeded
    assert queue.backend.stores.jobs.unblock_due() == 1
    assert statuses(queue) == {second: "ready"}


def test_higher_priority_is_admitted_first(queue: Queue) -> None:
    low = queue.enqueue("jobs:noop", concurrency_key="k", priority=0)
    high = queue.enqueue("jobs:noop", concurrency_key="k", priority=5)
    queue.backend.stores.jobs.unblock_due()
    assert statuses(queue) == {low: "blocked", high: "ready"}


def test_a_worker_runs_every_keyed_job_one_at_a_time(queue: Queue) -> None:
    for i in range(5):
        queue.enqueue("jobs:noop", {"i": i}, concurrency_key="k")
    worker = Worker(queue, RunOptions())
    worker.run()
    assert worker.summary.succeeded == 5  # each end frees the slot for the next (no wait needed)
    assert job_rows(queue) == []


def test_a_keyed_retry_waits_for_a_slot_again(queue: Queue) -> None:
    job_id = queue.enqueue("jobs:fail", "x", concurrency_key="k", max_errors=2)
    Worker(queue, RunOptions(backoff_base=60, max_jobs=1)).run()
    [row] = job_rows(queue)
    assert (row["status"], row["error_count"]) == ("blocked", 1)  # not 'scheduled': no bypass
    assert queue.explain(job_id).state == "delayed"  # its backoff first
    run_query(queue, "jobs_make_due")
    assert queue.explain(job_id).state == "blocked"
    Worker(queue, RunOptions(backoff_base=60)).run()
    [requeued] = gc_error(queue, "requeue")
    assert (requeued.status, requeued.concurrency_key) == ("blocked", "k")
    assert statuses(queue) == {job_id: "blocked"}


def test_explain_names_the_key_and_its_slots(queue: Queue) -> None:
    first = queue.enqueue("jobs:noop", concurrency_key="report:eu", concurrency_limit=1)
    second = queue.enqueue("jobs:noop", concurrency_key="report:eu", concurrency_limit=1)
    queue.backend.stores.jobs.unblock_due()
    waiting = queue.explain(second)
    assert (waiting.state, waiting.concurrency_key, waiting.key_active) == ("blocked", "report:eu", 1)
    assert "waiting for a slot of concurrency key 'report:eu', 1 of its 1 slot taken" in waiting.summary
    assert waiting.key_holders == (first,)
    assert f"its key's slots are held by job {first} (ready, not yet claimed)" in waiting.details
    assert queue.explain(first).state == "waiting"
    claim_one(queue)
    running = queue.explain(second)
    assert f"its key's slots are held by job {first} (running on host:1:00000000)" in running.details


def test_cancel_and_purge_take_blocked_jobs(queue: Queue) -> None:
    first = queue.enqueue("jobs:noop", concurrency_key="k")
    queue.enqueue("jobs:noop", concurrency_key="k")
    assert queue.cancel(first) is True
    assert queue.purge("default") == 1
    assert job_rows(queue) == []


def test_a_blocked_row_written_by_hand_without_a_limit_gets_one_slot(queue: Queue) -> None:
    ids = [queue.enqueue("jobs:noop", concurrency_key="k", concurrency_limit=5) for _ in range(3)]
    sql(queue, "UPDATE batchq_job SET concurrency_limit = NULL")
    assert queue.backend.stores.jobs.unblock_due() == 1
    assert sorted(statuses(queue).values()) == ["blocked", "blocked", "ready"]
    assert len(ids) == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency_limit": 2}, "concurrency_limit needs a concurrency_key"),
        ({"concurrency_key": ""}, "bad concurrency_key ''"),
        ({"concurrency_key": "k" * 256}, "bad concurrency_key"),
        ({"concurrency_key": "a\x00b"}, "without NUL"),
        ({"concurrency_key": "\ud800"}, "not valid UTF-8"),
        ({"concurrency_key": 42}, "bad concurrency_key 42"),
        ({"concurrency_key": "k", "concurrency_limit": 0}, "bad concurrency_limit 0"),
        ({"concurrency_key": "k", "concurrency_limit": 65536}, "bad concurrency_limit 65536"),
        ({"concurrency_key": "k", "concurrency_limit": True}, "bad concurrency_limit True"),
    ],
)
def test_bad_concurrency_options_are_refused_before_anything_is_written(
    queue: Queue, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        queue.enqueue("jobs:noop", **options)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        queue.enqueue_many("jobs:noop", [1, 2], **options)  # type: ignore[arg-type]
    assert job_rows(queue) == []
