"""The claim walks its index: the next due job is found without reading the backlog."""

from __future__ import annotations

import json
import time

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
    for name in ("jobs_claim", "jobs_claim_waiting"):
        # The locking SELECT of the multi-statement claim (after START TRANSACTION and DELETE).
        select = backend.sql(name).split(";")[2]
        statement = cur.mogrify(select, {"queue": "default", "limit": 100})
        cur.execute("EXPLAIN FORMAT=JSON " + statement)
        plan = json.loads(cur.fetchone()[0])
        text = json.dumps(plan)
        assert '"key": "batchq_job_claim"' in text, text
        assert "filesort" not in text and "temporary" not in text, text
    cur.close()


@pytest.mark.backends("sqlite")
def test_sqlite_claim_plan_uses_the_claim_index_without_a_sort(queue: Queue) -> None:
    _fill(queue)
    backend = queue.backend
    params = {"queue": "default", "worker": "w:1", "token": "t", "limit": 100}
    rows = backend.conn.execute("EXPLAIN QUERY PLAN " + backend.sql("jobs_claim"), params).fetchall()
    plan = "\n".join(str(row[-1]) for row in rows)
    assert "INDEX batchq_job_claim (queue=? AND status=?)" in plan, plan
    assert "TEMP B-TREE" not in plan, plan


def test_future_dated_jobs_at_a_higher_priority_are_not_walked(queue: Queue) -> None:
    """Delayed jobs at priority 5 are 'scheduled', outside the claim's range of 'ready' rows."""
    queue.enqueue_many("jobs:noop", list(range(2000)), priority=5, delay=3600)
    due = queue.enqueue("jobs:noop", "due", priority=0)
    [job] = queue.backend.claim("default", "w:1", "t" * 32).jobs
    assert job.id == due
    assert queue.backend.claim("default", "w:1", "u" * 32).jobs == []  # nothing due at any level
    assert queue.backend.promote_due() == 0  # and nothing to promote


def test_promotion_makes_due_scheduled_jobs_claimable(queue: Queue) -> None:
    late = queue.enqueue("jobs:noop", "late", delay=0.05)
    assert queue.backend.claim("default", "w:1", "t" * 32).jobs == []  # scheduled, not ready yet
    time.sleep(0.1)
    assert queue.backend.promote_due() == 1
    [job] = queue.backend.claim("default", "w:1", "t" * 32).jobs
    assert job.id == late
