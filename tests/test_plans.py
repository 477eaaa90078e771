"""The claim walks its index: the next due job is found without reading the backlog."""

from __future__ import annotations

import json

import pytest

from batchq import Queue


def _fill(queue: Queue) -> None:
    """5,000 due and 5,000 future-dated jobs, then fresh planner statistics."""
    for start in range(0, 5000, 1000):
        queue.enqueue_many("jobs:noop", list(range(start, start + 1000)))
        queue.enqueue_many("jobs:noop", list(range(start, start + 1000)), delay=3600)
    with queue.backend.errors():
        cur = queue.backend.conn.cursor()
        cur.execute("ANALYZE TABLE batchq_job" if queue.backend.dialect == "mysql" else "ANALYZE")
        cur.fetchall() if cur.description else None
        cur.close()


@pytest.mark.backends("mysql")
def test_mysql_claim_plan_uses_the_claim_index_without_a_sort(queue: Queue) -> None:
    _fill(queue)
    backend = queue.backend
    cur = backend.conn.cursor()
    for name in ("claim_select_skip_locked", "claim_batch_select_skip_locked"):
        statement = cur.mogrify(backend.sql(name), {"queue": "default", "priority": 0, "limit": 100})
        cur.execute("EXPLAIN FORMAT=JSON " + statement)
        plan = json.loads(cur.fetchone()[0])
        text = json.dumps(plan)
        assert '"key": "batchq_job_claim"' in text, text
        # More than the (queue, status) prefix: the priority level bounds the walk (and the
        # optimizer adds run_at to the range when statistics say few rows are due).
        table = plan["query_block"].get("nested_loop", [{}])[0].get("table") or plan["query_block"]["table"]
        assert int(table["key_length"]) > 259, text
        assert "filesort" not in text and "temporary" not in text, text
    cur.close()


@pytest.mark.backends("sqlite")
def test_sqlite_claim_plan_uses_the_claim_index_without_a_sort(queue: Queue) -> None:
    _fill(queue)
    backend = queue.backend
    for name in ("claim", "claim_batch"):
        params = {"queue": "default", "priority": 0, "worker": "w:1", "token": "t", "limit": 100}
        rows = backend.conn.execute("EXPLAIN QUERY PLAN " + backend.sql(name), params).fetchall()
        plan = "\n".join(str(row[-1]) for row in rows)
        assert "INDEX batchq_job_claim (queue=? AND status=? AND priority=? AND run_at<?)" in plan, plan
        assert "TEMP B-TREE" not in plan, plan


def test_future_dated_jobs_at_a_higher_priority_are_not_walked(queue: Queue) -> None:
    """Delayed jobs at priority 5 and nothing due there: the claim seeks to the next level."""
    queue.enqueue_many("jobs:noop", list(range(2000)), priority=5, delay=3600)
    due = queue.enqueue("jobs:noop", "due", priority=0)
    job = queue.backend.claim("default", "w:1", "t" * 32)
    assert job is not None and job["id"] == due
    assert queue.backend.claim("default", "w:1", "u" * 32) is None  # nothing due at any level
