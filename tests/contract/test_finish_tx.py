"""A job finished in its own transaction (@task(transactional=True), batchq.job_transaction):
the task's writes and the job's end commit together, or neither does."""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from typing import Any

import pytest

import batchq
from batchq import ConfigError, Queue
from batchq.backends import create_backend
from batchq.runtime.sweeps import ProcessingReport, gc_processing
from batchq.runtime.worker import RunOptions, RunSummary, Worker
from tests.support.db import job_rows, ledger
from tests.support.queries import query


def tasks() -> Any:
    """tests/apps/tx_jobs, as the worker imports it (tests/apps is on the path by then)."""
    return importlib.import_module("tx_jobs")


@pytest.fixture
def tx_queue(db_url: str) -> Iterator[Queue]:
    q = Queue(db_url, task_modules=["jobs", "tx_jobs"], secret=b"test-secret")
    yield q
    q.close()
    tasks().before_ask = tasks().after_write = tasks().queue_url = None


def run(queue: Queue, **options: Any) -> RunSummary:
    return Worker(queue, RunOptions(backoff_base=0, **options)).run()


def take_back(db_url: str) -> None:
    """What gc-processing does to a dead worker's job, done to the job being called."""
    job = batchq.current_job()
    assert job is not None
    sweep = create_backend(db_url)
    try:
        params = {"id": job.id, "token": job.claim_token, "error": "taken back", "fingerprint": "x"}
        assert sweep.execute("job_requeue_abandoned", params) == 1
    finally:
        sweep.close()


def test_the_task_writes_and_the_job_end_commit_together(tx_queue: Queue) -> None:
    job_id = tx_queue.enqueue("tx_jobs:record", {"n": 1}, keep_result=True)
    summary = run(tx_queue)
    assert (summary.succeeded, summary.errors, summary.stale_finishes) == (1, 0, 0)
    assert ledger(tx_queue) == [1]
    assert job_rows(tx_queue) == []
    assert tx_queue.result(job_id).value == 1  # its history record went in the same commit


def test_a_task_that_raises_leaves_neither(tx_queue: Queue) -> None:
    tx_queue.enqueue("tx_jobs:record", {"n": 2, "fail": True}, max_errors=1)
    summary = run(tx_queue)
    assert (summary.succeeded, summary.errors) == (0, 1)
    assert ledger(tx_queue) == []
    [row] = job_rows(tx_queue)
    assert (row["status"], row["error_count"]) == ("failed", 1)
    assert "failed after writing 2" in row["last_error"]


def test_a_claim_taken_back_before_the_ask_raises_claim_lost(tx_queue: Queue, db_url: str) -> None:
    tx_queue.enqueue("tx_jobs:record_and_swallow_claim_lost", {"n": 4})
    tasks().before_ask = lambda: take_back(db_url)
    summary = run(tx_queue, max_jobs=1)
    assert ledger(tx_queue) == []  # asked again after ClaimLost: refused, never autocommitted
    assert summary.stale_finishes == 1  # its success was fenced off: the sweep's record stands
    [row] = job_rows(tx_queue)
    assert (row["status"], row["error_count"], row["last_error"]) == ("ready", 1, "taken back")


def test_a_claim_taken_back_before_the_ask_fails_the_try_unrecorded(tx_queue: Queue, db_url: str) -> None:
    tx_queue.enqueue("tx_jobs:record", {"n": 5})
    tasks().before_ask = lambda: take_back(db_url)
    summary = run(tx_queue, max_jobs=1)
    assert ledger(tx_queue) == []
    assert (summary.succeeded, summary.errors, summary.stale_finishes) == (0, 1, 1)
    [row] = job_rows(tx_queue)
    assert (row["status"], row["last_error"]) == ("ready", "taken back")  # the sweep's, not ours


# SQLite: the job's transaction holds the database's only write lock; no sweep writes meanwhile.
@pytest.mark.backends("mysql", "postgresql")
def test_a_claim_taken_back_after_the_write_rolls_the_write_back(tx_queue: Queue, db_url: str) -> None:
    tx_queue.enqueue("tx_jobs:record", {"n": 6})
    tasks().after_write = lambda: take_back(db_url)  # on another session, as gc-processing would
    summary = run(tx_queue, max_jobs=1)
    assert ledger(tx_queue) == []
    assert (summary.succeeded, summary.stale_finishes) == (0, 1)
    [row] = job_rows(tx_queue)
    assert (row["status"], row["last_error"]) == ("ready", "taken back")


def test_a_task_that_commits_itself_fails_with_transaction_ended(tx_queue: Queue) -> None:
    tx_queue.enqueue("tx_jobs:record_and_commit", {"n": 7}, max_errors=1)
    summary = run(tx_queue)
    assert summary.errors == 1
    assert ledger(tx_queue) == [7]  # what it committed itself stays: its own doing
    [row] = job_rows(tx_queue)
    assert row["status"] == "failed"
    assert row["last_error"].startswith("TransactionEnded: the task ended its job's transaction itself")


def test_only_a_declared_task_has_a_job_transaction(tx_queue: Queue) -> None:
    tx_queue.enqueue("tx_jobs:not_declared", {"n": 8}, max_errors=1)
    run(tx_queue)
    assert ledger(tx_queue) == []
    [row] = job_rows(tx_queue)
    assert row["last_error"].startswith("ConfigError: job_transaction() in task 'tx_jobs:not_declared'")
    with pytest.raises(ConfigError, match="outside a worker's call"):
        batchq.job_transaction()


def test_dependants_are_released_in_the_same_commit(tx_queue: Queue) -> None:
    parent = tx_queue.enqueue("tx_jobs:record", {"n": 9})
    tx_queue.enqueue("tx_jobs:record", {"n": 10}, after=[parent])
    summary = run(tx_queue)
    assert summary.succeeded == 2
    assert ledger(tx_queue) == [9, 10]
    assert job_rows(tx_queue) == []


def test_batches_mix_transactional_and_plain_jobs(tx_queue: Queue) -> None:
    for n in range(6):
        tx_queue.enqueue("tx_jobs:record" if n % 2 else "jobs:echo", {"n": n})
    tx_queue.enqueue("tx_jobs:declared_but_unused", {"n": 99})
    summary = run(tx_queue, batch_size=4)
    assert (summary.succeeded, summary.errors) == (7, 0)
    assert ledger(tx_queue) == [1, 3, 5]
    assert job_rows(tx_queue) == []


@pytest.mark.parametrize("fail", [False, True])
def test_a_job_enqueued_on_the_job_transaction_commits_with_it(
    tx_queue: Queue, db_url: str, fail: bool
) -> None:
    tasks().queue_url = db_url
    tx_queue.enqueue("tx_jobs:record_and_follow", {"n": 20, "fail": fail}, max_errors=1)
    run(tx_queue)
    if fail:
        assert ledger(tx_queue) == []
        assert [row["task"] for row in job_rows(tx_queue)] == ["tx_jobs:record_and_follow"]
    else:
        assert ledger(tx_queue) == [20, 21]  # the follow-up ran too, in the same drain
        assert job_rows(tx_queue) == []


def test_a_lease_outlives_a_transactional_job_longer_than_it(server_url: str) -> None:
    """With lease liveness the heartbeat renews the lease on a connection of its own while the
    job's transaction holds the worker's: a sweep after the lease's length finds it alive."""
    url = server_url + ("&" if "?" in server_url else "?") + "liveness=lease&lease=3s"
    queue = Queue(url, task_modules=["jobs", "tx_jobs"], secret=b"test-secret")
    reports: list[ProcessingReport] = []

    def sweep_later() -> None:
        time.sleep(4.5)  # past the lease's 3 s: only a renewal keeps it
        sweeper = Queue(server_url)
        try:
            reports.append(gc_processing(sweeper))
        finally:
            sweeper.close()

    tasks().after_write = sweep_later
    try:
        queue.enqueue("tx_jobs:record", {"n": 30})
        summary = run(queue)
        assert [report.requeued for report in reports] == [[]]
        assert (summary.succeeded, summary.stale_finishes) == (1, 0)
        assert ledger(queue) == [30]
        assert job_rows(queue) == []
    finally:
        queue.close()
        tasks().after_write = None


def test_a_timed_out_transactional_task_leaves_neither(tx_queue: Queue) -> None:
    tx_queue.enqueue("tx_jobs:record", {"n": 40, "sleep": 30}, timeout=0.5, max_errors=1)
    summary = run(tx_queue)
    assert (summary.errors, summary.timed_out) == (1, 1)
    assert ledger(tx_queue) == []
    [row] = job_rows(tx_queue)
    assert row["status"] == "failed" and row["last_error"].startswith("JobTimeout")


SESSION_ID = {"mysql": "SELECT CONNECTION_ID()", "postgresql": "SELECT pg_backend_pid()"}


def test_a_session_lost_before_the_commit_runs_the_job_again_once(
    server_name: str, server_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker's session is ended between the task's write and the job's commit: the server
    rolls both back; the worker, which cannot know whether its commit happened, reconnects and
    puts the job back (uncounted) with its next claim; the second try writes the one row."""
    queue = Queue(server_url, task_modules=["jobs", "tx_jobs"], secret=b"test-secret")
    ended: list[int] = []

    def end_session() -> None:
        if ended:
            return
        cur = batchq.job_transaction().cursor()
        cur.execute(SESSION_ID[server_name])
        [(session,)] = cur.fetchall()
        cur.close()
        killer = create_backend(server_url)
        try:
            with killer.errors():
                kcur = killer.conn.cursor()
                kcur.execute(query(server_name, "session_end"), {"session": session})
                kcur.close()
        finally:
            killer.close()
        ended.append(session)

    tasks().after_write = end_session
    try:
        queue.enqueue("tx_jobs:record", {"n": 50})
        summary = run(queue)
        assert ended
        assert ledger(queue) == [50]
        assert job_rows(queue) == []
        assert (summary.succeeded, summary.errors) == (1, 0)  # put back uncounted, then done
        assert "the database connection was lost as the job ended in its transaction" in caplog.text
    finally:
        queue.close()
        tasks().after_write = None


def test_drain_runs_transactional_tasks_as_a_worker_does(tx_queue: Queue) -> None:
    from batchq.testing import drain

    tx_queue.enqueue("tx_jobs:record", {"n": 60})
    tx_queue.enqueue("tx_jobs:record", {"n": 61, "fail": True}, max_errors=1)
    outcomes = drain(tx_queue)
    assert [outcome.failed for outcome in outcomes] == [False, True]
    assert ledger(tx_queue) == [60]


def test_a_snooze_after_the_write_rolls_the_write_back_and_puts_the_job_back(tx_queue: Queue) -> None:
    """A Snooze is no success: the job is not ended in its transaction; the write goes with the
    rollback, and the snooze is recorded as for any task (uncounted, due in an hour)."""
    tx_queue.enqueue("tx_jobs:record_then_snooze", {"n": 7})
    summary = run(tx_queue, max_jobs=1)
    assert (summary.succeeded, summary.errors, summary.stale_finishes) == (0, 0, 0)
    assert ledger(tx_queue) == []
    [row] = job_rows(tx_queue)
    assert (row["status"], row["error_count"]) == ("scheduled", 0)
    assert tx_queue.explain(row["id"]).snoozes == 1
