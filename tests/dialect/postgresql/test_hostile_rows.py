"""Rows only PostgreSQL can hold (infinite timestamps), and a batch claim after ANALYZE
(issue 9, items 11, 15)."""

from __future__ import annotations

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows, sql
from tests.support.rows import dead_worker, no_traceback, processing, write_row


@pytest.mark.backends("postgresql")
def test_infinite_processing_at_does_not_stop_the_sweep_or_stats(queue: Queue, db_url: str) -> None:
    gone = dead_worker()
    first = write_row(queue, **processing(queue, gone))
    sql(queue, "UPDATE batchq_job SET processing_at = '-infinity' WHERE id = %s", (first,))
    second = write_row(queue, **processing(queue, gone))
    sql(queue, "UPDATE batchq_job SET processing_at = 'infinity' WHERE id = %s", (second,))
    swept = invoke_batchq(db_url, "gc-processing")
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{first}" in swept.stdout and f"#{second}" in swept.stdout
    assert invoke_batchq(db_url, "stats").returncode == 0


# -- found on the way: a PostgreSQL batch claim took more than its limit --------------------------


@pytest.mark.backends("postgresql")
def test_batch_claim_never_takes_more_than_its_limit_after_analyze(queue: Queue) -> None:
    # Statistics of a one-row table made the planner re-run the locking subquery per row.
    queue.enqueue("jobs:noop")
    sql(queue, "ANALYZE batchq_job")
    sql(queue, "DELETE FROM batchq_job")
    queue.enqueue_many("jobs:noop", list(range(10)))
    jobs = queue.backend.stores.jobs.claim("default", "w:1", "t" * 32, 3).jobs
    assert len(jobs) == 3
    assert [r["status"] for r in job_rows(queue)].count("processing") == 3
