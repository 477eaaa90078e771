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
