"""The claim walks its index on SQLite: the next due job is found without reading the backlog
(EXPLAIN QUERY PLAN)."""

from __future__ import annotations

import pytest

from batchq import Queue
from tests.support.rows import fill_backlog


@pytest.mark.backends("sqlite")
def test_sqlite_claim_plan_uses_the_claim_index_without_a_sort(queue: Queue) -> None:
    fill_backlog(queue)
    backend = queue.backend
    params = {"queue": "default", "worker": "w:1", "token": "t", "limit": 100}
    rows = backend.conn.execute("EXPLAIN QUERY PLAN " + backend.sql("jobs_claim"), params).fetchall()
    plan = "\n".join(str(row[-1]) for row in rows)
    assert "INDEX batchq_job_claim (queue=? AND status=?)" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
