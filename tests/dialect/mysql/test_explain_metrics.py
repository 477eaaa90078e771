"""`batchq explain` and `batchq metrics` on rows only a non-strict MySQL/MariaDB session can write:
a status outside the ENUM (stored as '') and a zero date (issue 13)."""

from __future__ import annotations

import pytest

from batchq import Queue
from batchq.ops.metrics import read_queues
from tests.support.db import sql
from tests.support.rows import write_row


@pytest.mark.backends("mysql")
def test_mysql_status_outside_the_enum_and_a_zero_date(queue: Queue) -> None:
    sql(queue, "SET SESSION sql_mode = ''")  # a careless session: 'bogus' is stored as ''
    hostile = write_row(queue, status="bogus")
    zero = write_row(queue, status="scheduled")
    sql(queue, "UPDATE batchq_job SET run_at = '0000-00-00', created_at = run_at WHERE id = %s", (zero,))

    found = queue.explain(hostile)
    assert (found.state, found.status) == ("unrunnable", "")
    assert "no worker will claim it" in found.summary
    found = queue.explain(zero)
    assert found.state == "waiting"  # the claim's own test: a zero date is before now
    assert found.run_at == "0000-00-00 00:00:00.000000" and found.due_in_seconds is None
    [default] = read_queues(queue.backend)  # the '' row is no state a worker acts on
    assert (default.ready, default.delayed, default.processing, default.failed) == (1, 0, 0, 0)
