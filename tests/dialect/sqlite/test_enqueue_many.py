"""enqueue_many on SQLite: multi-row INSERTs kept within the connection's limit on host
parameters (SQLITE_MAX_VARIABLE_NUMBER, 999 before SQLite 3.32), all or none."""

from __future__ import annotations

import sqlite3
import sys

import pytest

from batchq import Queue
from tests.support.db import sql


@pytest.mark.backends("sqlite")
@pytest.mark.skipif(sys.version_info < (3, 11), reason="Connection.setlimit needs Python 3.11")
def test_enqueue_many_fits_a_lowered_host_parameter_limit(queue: Queue) -> None:
    conn = queue.backend.conn
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 40)  # 12 shared + 28 payloads a statement
    assert queue.enqueue_many("jobs:echo", [{"n": i} for i in range(100)]) == 100
    assert sql(queue, "SELECT COUNT(*) FROM batchq_job") == [(100,)]


@pytest.mark.backends("sqlite")
@pytest.mark.skipif(sys.version_info < (3, 11), reason="Connection.setlimit needs Python 3.11")
def test_enqueue_many_over_several_statements_is_all_or_none(queue: Queue) -> None:
    """A batch split over several INSERTs runs in one transaction: a failing one (the table
    made read-only by a trigger after 60 rows) leaves nothing written."""
    conn = queue.backend.conn
    queue.enqueue("jobs:echo", None)  # the schema exists before the trigger is made
    conn.execute("DELETE FROM batchq_job")
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 40)
    conn.execute(
        "CREATE TEMP TRIGGER stop_at_60 BEFORE INSERT ON batchq_job"
        " WHEN (SELECT COUNT(*) FROM batchq_job) >= 60 BEGIN SELECT RAISE(ABORT, 'full'); END"
    )
    with pytest.raises(Exception, match="full"):
        queue.enqueue_many("jobs:echo", [{"n": i} for i in range(100)])
    assert sql(queue, "SELECT COUNT(*) FROM batchq_job") == [(0,)]
