"""`batchq explain`, `batchq metrics` and the dashboard's pages on infinite times, which only
PostgreSQL can hold (issue 13)."""

from __future__ import annotations

import pytest

from batchq import Queue
from batchq.dashboard.reads import job_page
from batchq.ops.metrics import read_queues
from tests.support.db import sql
from tests.support.rows import dead_worker, processing, write_row


@pytest.mark.backends("postgresql")
def test_postgresql_infinite_times_are_explained(queue: Queue) -> None:
    job = write_row(queue, **processing(queue, dead_worker()))
    sql(
        queue,
        "UPDATE batchq_job SET processing_at = 'infinity', created_at = '-infinity' WHERE id = %s",
        (job,),
    )
    found = queue.explain(job)
    assert (found.state, found.processing_at, found.running_seconds) == ("running", "infinity", None)
    assert found.created_at == "-infinity"


@pytest.mark.backends("postgresql")
def test_postgresql_infinite_times_have_no_age(queue: Queue) -> None:
    claimed, due = write_row(queue, **processing(queue, dead_worker())), write_row(queue)
    sql(queue, "UPDATE batchq_job SET processing_at = 'infinity' WHERE id = %s", (claimed,))
    sql(queue, "UPDATE batchq_job SET run_at = '-infinity' WHERE id = %s", (due,))
    [default] = read_queues(queue.backend)
    assert (default.ready, default.processing) == (1, 1)
    assert (default.oldest_due_seconds, default.oldest_processing_seconds) == (0, 0)


@pytest.mark.backends("postgresql")
def test_postgresql_infinite_due_times_page_through_the_dashboard(queue: Queue) -> None:
    earliest, due, late, later = (write_row(queue) for _ in range(4))
    sql(queue, "UPDATE batchq_job SET run_at = '-infinity' WHERE id = %s", (earliest,))
    sql(queue, "UPDATE batchq_job SET run_at = 'infinity' WHERE id IN (%s, %s)", (late, later))
    first = job_page(queue.backend, "default", state="ready", size=3)
    assert [row["id"] for row in first.jobs] == [earliest, due, late]
    assert first.jobs[0]["due_in_seconds"] is None
    assert first.next is not None and first.next.run_at == "infinity"  # the page ends on it
    rest = job_page(queue.backend, "default", state="ready", after=first.next, size=3)
    assert [row["id"] for row in rest.jobs] == [later] and rest.next is None
