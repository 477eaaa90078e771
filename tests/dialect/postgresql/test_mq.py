"""The message queue on PostgreSQL: what only this dialect shows."""

from __future__ import annotations

import pytest

from batchq import MessageQueue
from tests.support.messages import raw, read_plan_backlog


@pytest.mark.backends("postgresql")
def test_read_plan_walks_the_read_index(mq: MessageQueue) -> None:
    """FIFO among visible messages without sorting the backlog (an index regression fails here)."""
    params = read_plan_backlog(mq)
    plan = " ".join(str(row) for row in raw(mq.backend, "EXPLAIN " + mq.backend.sql("mq_read"), params))
    # Either index walks ids in order (the planner picks by statistics): no Sort of the backlog.
    # The UNLOGGED table of non-durable queues inherits batchq_message: a Merge Append of the two
    # tables' index walks keeps id order (its "Sort Key" line is no Sort node).
    assert "Index Scan" in plan and "Sort  (" not in plan, plan
