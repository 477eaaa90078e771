"""Failures grouped by fingerprint (issue 13): recorded by real workers, grouped and acted on by
gc-error, on every backend."""

from __future__ import annotations

import shlex

from batchq import Queue
from batchq.runtime.sweeps import failure_groups, gc_error, gc_processing
from batchq.runtime.worker import RunOptions, Worker
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows, sql
from tests.support.rows import dead_worker, processing, write_row


def run_all(queue: Queue) -> None:
    Worker(queue, RunOptions(backoff_base=0)).run()


def test_one_cause_is_one_group_whatever_the_payloads(queue: Queue) -> None:
    for n in range(5):
        queue.enqueue("jobs:fail", f"order {n}", max_errors=1)  # ValueError: boom: 'order N'
    queue.enqueue("jobs:return_false", max_errors=1)
    run_all(queue)
    big, small = failure_groups(queue)
    assert (big.count, big.tasks, big.queues) == (5, ("jobs:fail",), ("default",))
    assert big.sample.startswith("ValueError: boom: ")
    assert (small.count, small.tasks, small.sample) == (1, ("jobs:return_false",), "the task returned False")
    assert big.first_seen is not None and big.last_seen is not None
    stored = {row[0] for row in sql(queue, "SELECT error_fingerprint FROM batchq_job")}
    assert stored == {big.fingerprint, small.fingerprint}


def test_acting_on_a_group_leaves_the_others(queue: Queue) -> None:
    for n in range(3):
        queue.enqueue("jobs:fail", n, max_errors=1)
    other = queue.enqueue("jobs:return_false", max_errors=1)
    run_all(queue)
    big, small = failure_groups(queue)
    requeued = gc_error(queue, "requeue", groups=[big.fingerprint])
    assert sorted(job.id for job in requeued) == sorted(big.job_ids)
    assert {row["id"]: row["status"] for row in job_rows(queue) if row["status"] == "failed"} == {
        other: "failed"
    }
    assert [job.id for job in gc_error(queue, "delete", groups=[small.fingerprint])] == [other]
    assert gc_error(queue, groups=["0" * 16]) == []


def test_jobs_of_dead_workers_share_one_group_and_old_rows_group_by_their_error(queue: Queue) -> None:
    for _ in range(2):
        write_row(queue, **processing(queue, dead_worker(), error_count=0, max_errors=1))
    gc_processing(queue)  # out of tries: failed, one cause whichever worker died
    for key in "ab":  # failed before batchq recorded fingerprints, or written by hand
        job_id = write_row(queue, status="failed", error_count=3, max_errors=3)
        error = f"'KeyError: ''{key}'''"  # a SQL literal: KeyError: 'a'
        sql(queue, f"UPDATE batchq_job SET last_error = {error} WHERE id = {job_id}")
    by_hand, dead = sorted(failure_groups(queue), key=lambda group: group.sample)  # K before w
    assert (dead.count, by_hand.count) == (2, 2)  # KeyError 'a' and 'b': one cause, values masked
    assert by_hand.sample.startswith("KeyError: ") and by_hand.first_seen is None  # no time recorded
    assert "died while running the job" in dead.sample and dead.last_seen is not None


def test_the_cli_prints_one_block_per_cause(queue: Queue, db_url: str) -> None:
    for n in range(5):
        queue.enqueue("jobs:fail", n, max_errors=1)
    run_all(queue)
    [group] = failure_groups(queue)
    report = invoke_batchq(db_url, "gc-error")
    assert report.returncode == 3
    lines = report.stdout.splitlines()
    assert lines[0] == "batchq gc-error: 5 jobs out of tries, 1 cause"
    assert lines[1].startswith(
        f"  group {group.fingerprint}: 5 jobs, queue default, task jobs:fail, last failed "
    )
    assert lines[-2] == "    ... and 2 jobs more"
    assert group.failed_by is not None
    bound = group.failed_by.isoformat()
    hint = f"batchq gc-error --queue default --group {group.fingerprint} --failed-by {bound}"
    assert lines[-1] == f"    act on it: {hint} --requeue (or --delete)"
    done = invoke_batchq(db_url, *shlex.split(hint)[1:], "--delete")
    assert done.returncode == 3 and done.stdout.startswith("batchq gc-error: 5 jobs deleted, 1 cause")
    assert job_rows(queue) == []


def hinted(report: str) -> list[list[str]]:
    """gc-error's 'act on it' commands, as arguments after `batchq`, without the action."""
    prefix, suffix = "act on it: batchq ", " --requeue (or --delete)"
    hints = [line.strip() for line in report.splitlines() if line.strip().startswith(prefix)]
    return [shlex.split(hint[len(prefix) : -len(suffix)]) for hint in hints]


def scope(hint: list[str]) -> list[str]:
    """A hint's words but its --failed-by TIME, which every hint ends with (the group's latest
    failure, so that the command leaves alone jobs that fail after the listing)."""
    assert hint[-2] == "--failed-by", hint
    return hint[:-2]


def failed_ids(queue: Queue) -> list[int]:
    return sorted(row["id"] for row in job_rows(queue) if row["status"] == "failed")


def test_the_hint_acts_only_on_the_jobs_it_was_printed_for(queue: Queue, db_url: str) -> None:
    """`gc-error --queue g34` shows one job; the command it prints acts on that job, not on the
    cause's failed jobs in other queues (nor, listed by id, on the cause's other jobs)."""
    shown = queue.enqueue("jobs:fail", 1, queue="g34", max_errors=1)
    elsewhere = [queue.enqueue("jobs:fail", n, queue=name, max_errors=1) for n, name in enumerate("ab")]
    beside = queue.enqueue("jobs:fail", 2, queue="g34", max_errors=1)
    Worker(queue, RunOptions(backoff_base=0, queues=("g34", "a", "b"))).run()
    [group] = failure_groups(queue)  # one cause in three queues
    [by_id] = hinted(invoke_batchq(db_url, "gc-error", "--id", str(shown)).stdout)
    assert scope(by_id) == ["gc-error", "--queue", "g34", "--id", str(shown), "--group", group.fingerprint]
    deleted = invoke_batchq(db_url, *by_id, "--delete")
    assert deleted.stdout.startswith("batchq gc-error: 1 job deleted, 1 cause"), deleted.stdout
    assert failed_ids(queue) == sorted([*elsewhere, beside])

    [in_g34] = hinted(invoke_batchq(db_url, "gc-error", "--queue", "g34").stdout)
    assert scope(in_g34) == ["gc-error", "--queue", "g34", "--group", group.fingerprint]
    assert invoke_batchq(db_url, *in_g34, "--requeue").returncode == 3
    assert failed_ids(queue) == sorted(elsewhere)
    [everywhere] = hinted(invoke_batchq(db_url, "gc-error").stdout)  # every queue it showed
    assert scope(everywhere) == ["gc-error", "--queue", "a", "--queue", "b", "--group", group.fingerprint]


def test_the_hint_leaves_alone_a_job_that_failed_after_the_listing(queue: Queue, db_url: str) -> None:
    shown = queue.enqueue("jobs:fail", 1, queue="g34", max_errors=1)
    Worker(queue, RunOptions(backoff_base=0, queues=("g34",))).run()
    [hint] = hinted(invoke_batchq(db_url, "gc-error", "--queue", "g34").stdout)
    later = queue.enqueue("jobs:fail", 2, queue="g34", max_errors=1)  # same cause, same queue
    Worker(queue, RunOptions(backoff_base=0, queues=("g34",))).run()
    assert [group.count for group in failure_groups(queue)] == [2]
    requeued = invoke_batchq(db_url, *hint, "--requeue")
    assert requeued.stdout.startswith("batchq gc-error: 1 job requeued, 1 cause"), requeued.stdout
    assert failed_ids(queue) == [later]
    assert shown not in failed_ids(queue)


def test_a_bad_failed_by_is_one_line_and_writes_nothing(queue: Queue, db_url: str) -> None:
    job = queue.enqueue("jobs:fail", 1, max_errors=1)
    run_all(queue)
    refused = invoke_batchq(db_url, "gc-error", "--failed-by", "yesterday", "--delete")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("batchq: error: bad --failed-by 'yesterday': give an ISO 8601 time")
    assert len(refused.stderr.splitlines()) == 1
    assert failed_ids(queue) == [job]
