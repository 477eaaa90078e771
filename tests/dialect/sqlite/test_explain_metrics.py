"""`batchq explain` and `batchq metrics` on values only SQLite's loose column types can hold
(issue 13)."""

from __future__ import annotations

import pytest

from batchq import Queue
from batchq.ops.metrics import read_queues, render
from tests.support.db import sql
from tests.support.rows import write_row


@pytest.mark.backends("sqlite")
def test_sqlite_values_of_any_type_are_explained(queue: Queue) -> None:
    job = write_row(queue)
    sql(
        queue,
        "UPDATE batchq_job SET priority = 'high', error_count = 'many', max_errors = 2.5, "
        "run_at = 'garbage', created_at = X'FF', queue = CAST(X'FF' AS TEXT), "
        "task = CAST(X'6A6F62733AFF' AS TEXT) WHERE id = ?",
        (job,),
    )
    found = queue.explain(job)
    assert found.state == "delayed"  # 'garbage' sorts after every time: the claim never sees it due
    assert (found.priority, found.error_count, found.max_errors) == (None, None, None)
    assert found.run_at == "garbage" and found.due_in_seconds is None
    assert any("priority is 'high'" in note for note in found.notes)
    assert "why cannot be told" in found.summary


@pytest.mark.backends("sqlite")
def test_sqlite_values_of_any_type_are_counted(queue: Queue) -> None:
    bad, processing_garbage = write_row(queue), write_row(queue, status="processing")
    sql(queue, "UPDATE batchq_job SET run_at = 'garbage', queue = CAST(X'FF' AS TEXT) WHERE id = ?", (bad,))
    sql(queue, "UPDATE batchq_job SET processing_at = 42.5 WHERE id = ?", (processing_garbage,))
    by_name = {q.queue: q for q in read_queues(queue.backend)}
    assert by_name["\ufffd"].delayed == 1  # 'garbage' sorts after every time, as the claim sees it
    assert by_name["default"].processing == 1
    assert b'queue="\xef\xbf\xbd"' in render(queue.backend)
