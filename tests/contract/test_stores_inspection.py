"""The inspection store's contract (batchq.stores.inspection): each method called directly, on
every dialect. What `batchq metrics`, `batchq explain` and the dashboard make of these reads is
tested in test_metrics.py, test_explain.py and the dashboard's acceptance tests; here the reads
alone."""

from __future__ import annotations

import json
import time

from batchq import Queue
from batchq.backends.liveness import owner_name
from batchq.runtime.worker import RunOptions, Worker
from batchq.stores.inspection import (
    ClaimHolder,
    FinishedJobs,
    InspectionStore,
    KeyHolder,
    QueueMetrics,
    SearchWindow,
    StoredPayload,
)
from tests.support.db import SERVER_URLS, run_query
from tests.support.rows import dead_worker, processing, write_row

WINDOW = {"window": 100, "limit": 10, "payload_bytes": 65_536}


def store(queue: Queue) -> InspectionStore:
    return queue.backend.stores.inspection


def run_worker(queue: Queue, **options: object) -> None:
    Worker(queue, RunOptions(**options)).run()  # type: ignore[arg-type]


def test_each_dialect_gets_the_store(queue: Queue) -> None:
    assert type(store(queue)) is InspectionStore
    assert store(queue) is store(queue)  # made once per connection


# -- batchq metrics --------------------------------------------------------------------


def test_queue_metrics_count_each_state_per_queue_and_list_paused_queues(queue: Queue) -> None:
    inspection = store(queue)
    assert inspection.queue_metrics() == []
    queue.enqueue("jobs:noop", queue="mail")
    queue.enqueue("jobs:noop", queue="mail", delay="1h")
    queue.enqueue("jobs:noop", queue="mail", concurrency_key="k")  # ready: the key's first
    queue.enqueue("jobs:noop", queue="mail", concurrency_key="k")  # blocked
    queue.backend.stores.jobs.unblock_due()
    write_row(queue, **processing(queue, dead_worker()), queue="mail")
    write_row(queue, status="failed", queue="mail")
    queue.pause("idle")
    idle, mail = inspection.queue_metrics()  # by name
    assert isinstance(mail, QueueMetrics)
    # ready: the plain one and the key's first; blocked: the key's second
    assert (mail.ready, mail.delayed, mail.blocked, mail.processing, mail.failed) == (2, 1, 1, 1, 1)
    assert not mail.paused and 0 <= mail.oldest_due_seconds < 60
    assert 3500 < mail.oldest_processing_seconds < 3700  # claimed an hour ago
    assert idle == QueueMetrics("idle", paused=True)


def test_finished_counts_the_jobs_kept_in_history_within_the_window(queue: Queue) -> None:
    inspection = store(queue)
    queue.configure("kept", keep_for=3600)
    queue.enqueue("jobs:noop", 1, queue="kept")
    queue.enqueue("jobs:noop", 2, queue="kept")
    queue.enqueue("jobs:fail", "x", queue="kept", max_errors=1)
    queue.enqueue("jobs:noop", queue="plain")  # not kept: not counted
    run_worker(queue, backoff_base=0, queues=("kept", "plain"))
    found = {(f.queue, f.task, f.outcome): f for f in inspection.finished(3600)}
    assert set(found) == {("kept", "jobs:noop", "succeeded"), ("kept", "jobs:fail", "failed")}
    done = found[("kept", "jobs:noop", "succeeded")]
    assert isinstance(done, FinishedJobs) and done.jobs == 2
    assert done.wall_seconds >= done.wall_max_seconds >= 0 and done.cpu_seconds >= 0
    assert found[("kept", "jobs:fail", "failed")].jobs == 1
    time.sleep(0.2)
    assert inspection.finished(0.1) == []  # finished before the window


def test_locks_held_counts_held_slots_only(queue: Queue) -> None:
    inspection = store(queue)
    assert inspection.locks_held() == 0
    assert queue.lock("nightly", ttl="5m").acquire()
    assert queue.lock("brief", ttl=0.05).acquire()
    released = queue.lock("done", ttl="5m")
    assert released.acquire() and released.release()
    time.sleep(0.2)  # "brief" expires on the database's clock
    assert inspection.locks_held() == 1


# -- batchq explain --------------------------------------------------------------------


def test_job_reads_the_row_and_what_explain_draws_from_it(queue: Queue) -> None:
    inspection = store(queue)
    job = queue.enqueue("jobs:noop", {"a": 1}, queue="mail", priority=3, concurrency_key="k")
    queue.backend.stores.jobs.unblock_due()
    queue.pause("mail")
    row = inspection.job(job)
    assert row is not None
    assert (row["id"], row["queue"], row["task"], row["status"], row["priority"]) == (
        job,
        "mail",
        "jobs:noop",
        "ready",
        3,
    )
    assert bool(row["paused"]) and bool(row["due"]) and row["concurrency_key"] == "k"
    assert int(row["key_active"]) == 1
    assert inspection.job(job + 1000) is None


def test_jobs_ahead_follow_the_claim_order(queue: Queue) -> None:
    inspection = store(queue)
    first = queue.enqueue("jobs:noop")
    second = queue.enqueue("jobs:noop")
    top = queue.enqueue("jobs:noop", priority=5)
    run_query(queue, "jobs_make_due")  # one due time: the id decides
    queue.enqueue("jobs:noop", queue="other", priority=9)  # another queue
    queue.enqueue("jobs:noop", priority=9, delay=3600)  # not due
    assert [inspection.jobs_ahead(job) for job in (top, first, second)] == [0, 1, 2]
    assert inspection.jobs_ahead(second + 1000) is None


def test_key_holders_are_the_oldest_ready_or_running_jobs_of_a_key(queue: Queue) -> None:
    inspection = store(queue)
    assert inspection.key_holders("k") == []
    first = queue.enqueue("jobs:noop", concurrency_key="k", concurrency_limit=2)
    second = queue.enqueue("jobs:noop", concurrency_key="k", concurrency_limit=2)
    queue.enqueue("jobs:noop", concurrency_key="k", concurrency_limit=2)  # blocked: holds none
    assert inspection.key_holders("k") == []  # all blocked until admitted
    queue.backend.stores.jobs.unblock_due()
    gone = dead_worker()
    [claimed] = queue.backend.stores.jobs.claim("default", gone, "d" * 32).jobs
    assert claimed.id == first
    assert inspection.key_holders("k") == [
        KeyHolder(first, "processing", gone),
        KeyHolder(second, "ready", None),
    ]
    assert inspection.key_holders(None) == []


def test_worker_alive_as_gc_processing_asks(queue: Queue) -> None:
    inspection = store(queue)
    assert inspection.worker_alive(None) is False and inspection.worker_alive("") is False
    assert inspection.worker_alive(dead_worker()) is False
    url = str(queue.url) if queue.backend.dialect == "sqlite" else SERVER_URLS[queue.backend.dialect]
    live = Queue(url, task_modules=["jobs"])
    name = owner_name()
    live.backend.liveness.hold(name)
    try:
        assert inspection.worker_alive(name) is True
    finally:
        live.close()
    elsewhere = inspection.worker_alive("elsewhere.example:4242:0123abcd")
    assert elsewhere is (None if queue.backend.dialect == "sqlite" else False)


# -- the dashboard ---------------------------------------------------------------------


def test_jobs_below_and_after_page_through_a_state_in_claim_order(queue: Queue) -> None:
    inspection = store(queue)
    low = [queue.enqueue("jobs:noop", n, queue="mail") for n in range(3)]
    high = queue.enqueue("jobs:noop", queue="mail", priority=5)
    queue.enqueue("jobs:echo", queue="mail")
    queue.enqueue("jobs:noop", queue="other", priority=9)
    run_query(queue, "jobs_make_due")
    rows = inspection.jobs_below("mail", "ready", "jobs:noop", 32768, 10)
    assert [row["id"] for row in rows] == [high, *low]
    assert [row["id"] for row in inspection.jobs_below("mail", "ready", "jobs:noop", 5, 2)] == low[:2]
    assert inspection.jobs_below("mail", "failed", None, 32768, 10) == []
    assert len(inspection.jobs_below("mail", "ready", None, 32768, 10)) == 5  # any task
    last = rows[1]
    after = inspection.jobs_after("mail", "ready", "jobs:noop", 0, last["run_at_text"], last["id"], 10)
    assert [row["id"] for row in after] == low[1:]
    assert inspection.jobs_after("mail", "ready", "jobs:noop", 0, last["run_at_text"], low[2], 10) == []


def test_payload_as_stored_and_none_for_no_job(queue: Queue) -> None:
    inspection = store(queue)
    job = queue.enqueue("jobs:noop", {"a": [1, 2]})
    found = inspection.payload(job)
    assert isinstance(found, StoredPayload) and found.serializer == "json"
    assert isinstance(found.data, bytes) and json.loads(found.data) == {"a": [1, 2]}
    empty = write_row(queue, payload=None)
    assert inspection.payload(empty) == StoredPayload(None, "json")
    assert inspection.payload(job + 1000) is None


def test_claim_holders_count_each_workers_claims_and_ask_its_liveness(queue: Queue) -> None:
    inspection = store(queue)
    assert inspection.claim_holders() == []
    gone = dead_worker()
    write_row(queue, **processing(queue, gone))
    write_row(queue, **processing(queue, gone))
    write_row(queue, **processing(queue, None))
    holders = {holder.name: holder for holder in inspection.claim_holders()}
    assert set(holders) == {gone, None}
    assert isinstance(holders[gone], ClaimHolder)
    assert (holders[gone].jobs, holders[gone].alive) == (2, False)
    seconds = holders[gone].oldest_seconds
    assert seconds is not None and 3500 < seconds < 3700
    assert (holders[None].jobs, holders[None].alive) == (1, False)  # no worker recorded


def test_search_finds_text_in_json_payloads_and_errors_within_a_window(queue: Queue) -> None:
    inspection = store(queue)
    queue.configure("kept", keep_for=3600)
    match = queue.enqueue("jobs:fail", {"order": "needle-42"}, max_errors=1)
    queue.enqueue("jobs:fail", {"order": "hay"}, max_errors=1)
    other = queue.enqueue("jobs:fail", "zzz", queue="kept", max_errors=1)
    run_worker(queue, backoff_base=0, queues=("default", "kept"))
    found = inspection.search("failed", None, None, "needle-42", **WINDOW)
    assert isinstance(found, SearchWindow) and found.size == 3  # failed rows in the window
    assert [row["id"] for row in found.rows] == [match]
    by_error = inspection.search("failed", None, None, "boom: 'zzz'", **WINDOW)
    assert [row["id"] for row in by_error.rows] == [other]
    in_default = inspection.search("failed", "default", "jobs:fail", None, **WINDOW)
    assert (len(in_default.rows), in_default.size) == (2, 2)
    assert inspection.search("failed", None, "jobs:noop", None, **WINDOW).rows == []
    small = inspection.search("failed", None, None, None, window=1, limit=10, payload_bytes=65_536)
    assert (len(small.rows), small.size) == (1, 2)  # one more than the window: older rows exist
    history = inspection.search("history", "kept", None, "zzz", **WINDOW)
    assert [(row["id"], row["status"]) for row in history.rows] == [(other, "failed")]
    assert history.size == 1 and inspection.search("history", None, None, None, **WINDOW).size == 1


def test_search_id_finds_a_job_in_the_table_and_in_the_history(queue: Queue) -> None:
    inspection = store(queue)
    queue.configure("kept", keep_for=3600)
    waiting = queue.enqueue("jobs:noop")
    done = queue.enqueue("jobs:noop", queue="kept")
    run_worker(queue, queues=("kept",))
    [row] = inspection.search_id(waiting)
    assert (row["id"], row["status"], int(row["history"])) == (waiting, "ready", 0)
    [row] = inspection.search_id(done)
    assert (row["id"], row["status"], int(row["history"])) == (done, "succeeded", 1)
    assert inspection.search_id(done + 1000) == []
