"""`Queue.explain` on every backend: each state in words and fields, jobs ahead in the claim's
order, a paused queue, a dead and a live worker, rows written by hand (issue 13)."""

from __future__ import annotations

from datetime import datetime

import pytest

from batchq import ConfigError, Queue
from batchq.backends.liveness import owner_name
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import SERVER_URLS, run_query, sql
from tests.support.processes import wait_for
from tests.support.rows import ERROR_COUNT_MAX, dead_worker, processing, write_row


def run_worker(queue: Queue, **options: object) -> None:
    Worker(queue, RunOptions(**options)).run()  # type: ignore[arg-type]


def test_waiting_jobs_count_the_jobs_a_claim_takes_first(queue: Queue) -> None:
    x1 = queue.enqueue("jobs:noop")
    x2 = queue.enqueue("jobs:noop")
    top = queue.enqueue("jobs:noop", priority=5)
    run_query(queue, "jobs_make_due")  # x1, x2 and top share one due time: the id decides
    early = write_row(queue)  # priority 0, due an hour ago: before x1 and x2 despite its id
    promoted = write_row(queue, status="scheduled")  # due, not yet promoted: counts, after early
    late = queue.enqueue("jobs:noop")  # due last
    # None of these is ahead of anything: another queue, not due, claimed, failed.
    queue.enqueue("jobs:noop", queue="other", priority=9)
    queue.enqueue("jobs:noop", priority=9, delay=3600)
    write_row(queue, **processing(queue, dead_worker()), priority=9)
    write_row(queue, status="failed", priority=9)

    ahead = {job: queue.explain(job).jobs_ahead for job in (top, early, promoted, x1, x2, late)}
    assert ahead == {top: 0, early: 1, promoted: 2, x1: 3, x2: 4, late: 5}
    found = queue.explain(x2)
    assert (found.state, found.status, found.queue_paused) == ("waiting", "ready", False)
    assert found.summary.startswith(f"job {x2}: waiting, due since ")
    assert "4 jobs ahead of it in queue default" in found.details[1]
    assert found.due_in_seconds is not None and found.due_in_seconds <= 0
    assert isinstance(found.run_at, datetime) and found.run_at.tzinfo is not None
    assert queue.explain(promoted).status == "scheduled"
    assert any("makes it ready" in line for line in queue.explain(promoted).details)


def test_a_paused_queue_is_why_a_due_job_waits(queue: Queue) -> None:
    due = queue.enqueue("jobs:noop", queue="mail")
    later = queue.enqueue("jobs:noop", queue="mail", delay="1h")
    queue.pause("mail")
    found = queue.explain(due)
    assert (found.state, found.queue_paused) == ("waiting", True)
    assert "queue mail is paused" in found.summary and "batchq resume mail" in found.summary
    delayed = queue.explain(later)
    assert (delayed.state, delayed.queue_paused) == ("delayed", True)
    assert any("queue mail is paused" in line for line in delayed.details)
    queue.resume("mail")
    assert queue.explain(due).queue_paused is False
    assert "paused" not in queue.explain(due).summary


def test_delayed_at_enqueue_says_until_when_and_the_delay(queue: Queue) -> None:
    job = queue.enqueue("jobs:noop", delay="10m")
    found = queue.explain(job)
    assert (found.state, found.delay_reason, found.jobs_ahead) == ("delayed", "delay", None)
    assert found.due_in_seconds == pytest.approx(600, abs=5)
    assert found.delay_seconds == pytest.approx(600, abs=0.01)
    assert "delayed until" in found.summary and "enqueued with a delay of 10m00s" in found.summary


def test_delayed_by_a_retry_backoff_says_after_which_failure(queue: Queue) -> None:
    job = queue.enqueue("jobs:fail", "x", max_errors=3)
    run_worker(queue, backoff_base=60)
    found = queue.explain(job)
    assert (found.state, found.status, found.delay_reason) == ("delayed", "scheduled", "backoff")
    assert (found.error_count, found.max_errors) == (1, 3)
    assert found.due_in_seconds == pytest.approx(60, abs=5)
    assert "retry backoff after failure 1 of 3" in found.summary
    assert "ValueError: boom: 'x'" in found.summary
    assert found.last_error is not None and found.last_error.startswith("ValueError: boom: 'x'")


def test_failed_after_n_tries_with_the_last_error(queue: Queue) -> None:
    job = queue.enqueue("jobs:fail", "y", max_errors=1)
    run_worker(queue)
    found = queue.explain(job)
    assert (found.state, found.error_count, found.max_errors) == ("failed", 1, 1)
    assert found.summary == f"job {job}: failed after 1 of 1 try; no worker will run it again"
    assert any(line.strip().startswith("ValueError: boom: 'y'") for line in found.details)
    assert any(f"batchq gc-error --id {job} --requeue" in line for line in found.details)


def test_running_on_a_dead_worker(queue: Queue) -> None:
    queue.enqueue("jobs:noop")
    gone = dead_worker()
    [job] = queue.backend.stores.jobs.claim("default", gone, "d" * 32).jobs
    found = queue.explain(job.id)
    assert (found.state, found.worker, found.worker_alive) == ("running", gone, False)
    assert found.running_seconds is not None and 0 <= found.running_seconds < 60
    assert isinstance(found.processing_at, datetime)
    assert f"running on {gone} since" in found.summary
    assert "its worker is gone: `batchq gc-processing` puts the job back" in found.summary


def test_running_on_a_live_worker(queue: Queue) -> None:
    queue.enqueue("jobs:noop")
    # A live worker: this process, holding its liveness lock on a connection of its own.
    url = str(queue.url) if queue.backend.dialect == "sqlite" else SERVER_URLS[queue.backend.dialect]
    live = Queue(url, task_modules=["jobs"])
    name = owner_name()
    live.backend.liveness.hold(name)
    try:
        [job] = live.backend.stores.jobs.claim("default", name, "l" * 32).jobs
        found = queue.explain(job.id)
        assert (found.state, found.worker, found.worker_alive) == ("running", name, True)
        assert found.summary.endswith("its worker is alive")
        assert found.notes == ()  # a row batchq wrote reads without a note (no key: no limit)
    finally:
        live.close()
    # Its connection closed, the worker is gone as far as the database can tell.
    # (A server ends the session, and frees its lock, a moment after the client hung up.)
    expected = queue.backend.dialect == "sqlite"  # SQLite asks the pid: ours, still alive
    wait_for(lambda: queue.explain(job.id).worker_alive is expected, timeout=10)


def test_another_hosts_worker_cannot_be_told_on_sqlite_only(queue: Queue) -> None:
    queue.enqueue("jobs:noop")
    [job] = queue.backend.stores.jobs.claim("default", "elsewhere.example:4242:0123abcd", "e" * 32).jobs
    found = queue.explain(job.id)
    if queue.backend.dialect == "sqlite":
        assert found.worker_alive is None
        assert "whether its worker is alive cannot be told from here" in found.summary
    else:  # the lock is the server's: any host's worker is told
        assert found.worker_alive is False


@pytest.mark.parametrize("job_id", [987654321, 1, 2**63 - 1, 2**63, 0, -5])
def test_an_unknown_id_may_have_finished(queue: Queue, job_id: int) -> None:
    found = queue.explain(job_id)
    assert (found.state, found.exists, found.id) == ("unknown", False, job_id)
    assert f"no job {job_id}: it may have finished" in found.summary
    assert f"`batchq history --id {job_id}` shows it" in found.summary


def test_a_finished_job_is_unknown(queue: Queue) -> None:
    job = queue.enqueue("jobs:noop")
    assert queue.explain(job).state == "waiting"
    run_worker(queue)
    assert queue.explain(job).state == "unknown"


@pytest.mark.parametrize("job_id", ["1", 1.0, True, None])
def test_an_id_that_is_not_a_whole_number_is_refused(queue: Queue, job_id: object) -> None:
    with pytest.raises(ConfigError, match="bad job id"):
        queue.explain(job_id)  # type: ignore[arg-type]


def test_explain_reads_only(queue: Queue) -> None:
    jobs = [queue.enqueue("jobs:noop"), queue.enqueue("jobs:noop", delay=60)]
    before = sql(queue, "SELECT * FROM batchq_job ORDER BY id")
    for job in jobs:
        queue.explain(job)
    assert sql(queue, "SELECT * FROM batchq_job ORDER BY id") == before


# -- rows written by hand ------------------------------------------------------------------------


def test_rows_written_by_hand_are_explained_not_crashed_on(queue: Queue, backend_name: str) -> None:
    no_owner = write_row(queue, **processing(queue, None))
    no_start = write_row(queue, **processing(queue, "w:1", claimed_an_hour_ago=False))
    odd_owner = write_row(queue, **processing(queue, "\x1b[31mno:such\nworker"))
    worn_out = write_row(queue, error_count=ERROR_COUNT_MAX[backend_name], max_errors=0)
    odd_error = write_row(queue, status="failed")
    sql_param = "?" if backend_name == "sqlite" else "%s"
    sql(queue, f"UPDATE batchq_job SET last_error = {sql_param} WHERE id = {sql_param}", ("\n\n", odd_error))
    far_past, far_future = write_row(queue), write_row(queue, status="scheduled")
    run_query(queue, "job_set_run_at_far_past", {"id": far_past})
    run_query(queue, "job_set_run_at_far_future", {"id": far_future})

    found = queue.explain(no_owner)
    assert (found.state, found.worker, found.worker_alive) == ("running", None, False)
    assert "(no worker recorded)" in found.summary
    found = queue.explain(no_start)
    assert (found.state, found.running_seconds) == ("running", None)
    assert "since an unknown time" in found.summary
    assert queue.explain(odd_owner).state == "running"
    assert queue.explain(worn_out).state == "waiting"
    assert queue.explain(odd_error).state == "failed"
    assert queue.explain(far_past).state == "waiting"
    assert queue.explain(far_past).jobs_ahead == 0  # the earliest due time goes first
    assert queue.explain(far_future).state == "delayed"
