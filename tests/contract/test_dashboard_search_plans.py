"""The dashboard's search stays inside its window on every backend: the job table is read
through the window's index and, where the rows are joined back, by primary key only, never by
a scan a filter could choose (batchq.dashboard.search; the figures in docs/dashboard-search.md).
PostgreSQL once planned a hash join over a seq scan of every row of the task searched."""

from __future__ import annotations

from typing import Any

import pytest

from batchq import Queue
from batchq.backends.sqlfiles import queries
from tests.support.db import sql

PARAMS = {
    "task": "jobs:fail",
    "text": "x",
    "needle": b"x",
    "window": 10_000,
    "limit": 50,
    "payload_bytes": 65_536,
}
SEARCHES = [
    ("dashboard_search_jobs", {"status": "failed", "queue": None}),
    ("dashboard_search_queue_jobs", {"status": "ready", "queue": "default"}),
    ("dashboard_search_history", {"queue": None}),
    ("dashboard_search_queue_history", {"queue": "default"}),
]


def plan(queue: Queue, name: str, params: dict[str, Any]) -> str:
    dialect = queue.backend.dialect
    statement = queries(dialect)[name]
    prefix = {"sqlite": "EXPLAIN QUERY PLAN ", "mysql": "EXPLAIN ", "postgresql": "EXPLAIN "}[dialect]
    backend = queue.backend
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute(prefix + statement, params)
        rows = cur.fetchall()
        cur.close()
    return "\n".join(
        " | ".join(str(v) for v in (row.values() if isinstance(row, dict) else row)) for row in rows
    )


@pytest.mark.parametrize(("name", "params"), SEARCHES, ids=[name for name, _ in SEARCHES])
def test_a_search_reads_its_window_and_the_primary_key_only(
    queue: Queue, name: str, params: dict[str, Any]
) -> None:
    queue.enqueue_many("jobs:noop", [{"n": n} for n in range(500)])
    queue.enqueue_many("jobs:fail", [{"n": n} for n in range(500)], queue="other")
    sql(
        queue,
        "INSERT INTO batchq_history (id, queue, task, payload, serializer, outcome, attempts, enqueued_at,"
        " finished_at) SELECT id, queue, task, payload, serializer, 'succeeded', 1, created_at, created_at"
        " FROM batchq_job",
    )
    dialect = queue.backend.dialect
    sql(queue, "ANALYZE" if dialect != "mysql" else "ANALYZE TABLE batchq_job, batchq_history")
    shown = plan(queue, name, {**PARAMS, **params})
    if dialect == "postgresql":  # one read of the table, under the window's Limit: no join at all
        assert "Join" not in shown and "Nested Loop" not in shown, shown
        assert shown.count(" on batchq_") == 1 and shown.count("Limit") == 2, shown
    elif dialect == "sqlite":  # the window materialised from an index, then rows by rowid
        assert "USING INTEGER PRIMARY KEY" in shown and "SCAN j" not in shown and "SCAN h" not in shown, shown
    else:  # MariaDB: the joined table by eq_ref on its primary key
        joined = [line for line in shown.splitlines() if "| j |" in line or "| h |" in line]
        assert joined and all("eq_ref" in line and "PRIMARY" in line for line in joined), shown
