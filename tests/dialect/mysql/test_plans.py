"""The claim walks its index on MySQL/MariaDB: the next due job is found without reading the
backlog (EXPLAIN FORMAT=JSON)."""

from __future__ import annotations

import json

import pytest

from batchq import Queue
from tests.support.rows import fill_backlog


@pytest.mark.backends("mysql")
def test_mysql_claim_plan_uses_the_claim_index_without_a_sort(queue: Queue) -> None:
    fill_backlog(queue)
    backend = queue.backend
    cur = backend.conn.cursor()
    for name in ("jobs_claim", "jobs_claim_waiting"):
        # The locking SELECT of the multi-statement claim, its last statement.
        select = backend.sql(name).split(";")[-1]
        statement = cur.mogrify(select, {"queue": "default", "limit": 100})
        cur.execute("EXPLAIN FORMAT=JSON " + statement)
        plan = json.loads(cur.fetchone()[0])
        text = json.dumps(plan)
        assert '"key": "batchq_job_claim"' in text, text
        assert "filesort" not in text and "temporary" not in text, text
    cur.close()
