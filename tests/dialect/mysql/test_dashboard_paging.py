"""The dashboard's job pages stay a page's work with 1,000,000 jobs in the queue (MariaDB): each
page, first or deep, filtered by state or task or not, reads about a page of index entries,
counted by the session's handler counters (Handler_icp_attempts too: rows an index condition
drops inside InnoDB, which no other counter shows)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.dashboard.reads import PAGE_SIZE, Cursor, job_page
from tests.support.db import drop_database, fresh_database_url, sibling_database, sql

pytestmark = [pytest.mark.slow, pytest.mark.backends("mysql")]

JOBS = 1_000_000
COUNTERS = "('Handler_read_key', 'Handler_read_next', 'Handler_read_prev', 'Handler_read_rnd_next', 'Handler_icp_attempts')"  # noqa: E501


@pytest.fixture
def big_queue(backend_name: str, tmp_path: Path) -> Iterator[Queue]:
    """A sibling database (dropped after, never emptied row by row) with JOBS jobs in queue
    'big': priorities 0-2, two tasks, every 10,000th failed; one INSERT ... SELECT."""
    url = fresh_database_url("mysql", tmp_path, "dashboard_paging")
    queue = Queue(url)
    queue.init_db()
    sql(
        queue,
        "INSERT INTO batchq_job (queue, task, serializer, priority, status, run_at, max_errors, created_at)"
        " SELECT 'big', IF(MOD(seq, 2), 'jobs:noop', 'jobs:echo'), 'json', MOD(seq, 3),"
        " IF(MOD(seq, 10000) = 0, 'failed', 'ready'), UTC_TIMESTAMP(6) - INTERVAL seq SECOND, 10,"
        f" UTC_TIMESTAMP(6) FROM seq_1_to_{JOBS}",
    )
    sql(queue, "ANALYZE TABLE batchq_job")
    yield queue
    queue.close()
    drop_database("mysql", sibling_database("mysql", "dashboard_paging"))


def index_reads(queue: Queue, **page: Any) -> tuple[int, int]:
    """(jobs listed, index entries read) for one page."""
    before = _counters(queue)
    listed = len(job_page(queue.backend, "big", **page).jobs)
    return listed, _counters(queue) - before


def _counters(queue: Queue) -> int:
    return sum(
        int(value) for _, value in sql(queue, f"SHOW SESSION STATUS WHERE Variable_name IN {COUNTERS}")
    )


def test_a_page_reads_a_page_of_a_million_jobs(big_queue: Queue) -> None:
    [(priority, run_at, middle)] = sql(
        big_queue, "SELECT priority, CAST(run_at AS CHAR), id FROM batchq_job WHERE id = 500001"
    )
    deep = Cursor("ready", priority, run_at, middle)  # half the queue before it in claim order
    [(last_priority, last_run_at, last)] = sql(
        big_queue,
        "SELECT priority, CAST(run_at AS CHAR), id FROM batchq_job WHERE priority = 1 AND status = 'ready'"
        " ORDER BY run_at DESC, id DESC LIMIT 1 OFFSET 10",
    )  # ten jobs left at priority 1, then priority 0's
    pages = {
        "first page, any state": {},
        "first page of ready": {"state": "ready"},
        "deep page of ready": {"state": "ready", "after": deep},
        "deep page of one task": {"state": "ready", "task": "jobs:echo", "after": deep},
        "failed (100 of a million)": {"state": "failed"},
        "the end of one priority, then the next": {
            "after": Cursor("ready", last_priority, last_run_at, last)
        },
    }
    for what, page in pages.items():
        listed, reads = index_reads(big_queue, **page)
        assert listed == PAGE_SIZE, what
        # An entry an index condition reads counts twice (an ICP attempt, then a read); half the
        # entries of a task filter's walk are the other task's; a few more for each query's
        # first seek and the look-ahead row that tells a next page exists.
        allowed = 4 * (PAGE_SIZE + 1) + 8 if "task" in page else 2 * (PAGE_SIZE + 1) + 8
        assert reads <= allowed, (what, reads)
