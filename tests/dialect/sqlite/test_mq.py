"""The message queue on SQLite: what only this dialect shows."""

from __future__ import annotations

import pytest

from batchq import ConfigError, MessageQueue
from tests.support.messages import raw, read_plan_backlog


@pytest.mark.backends("sqlite")
def test_read_plan_walks_the_read_index(mq: MessageQueue) -> None:
    """FIFO among visible messages without sorting the backlog (an index regression fails here)."""
    params = read_plan_backlog(mq)
    plan = " ".join(
        str(row) for row in raw(mq.backend, "EXPLAIN QUERY PLAN " + mq.backend.sql("mq_read"), params)
    )
    assert "batchq_message_read" in plan and "TEMP B-TREE" not in plan, plan


@pytest.mark.backends("sqlite")
def test_a_non_durable_queue_is_refused(mq: MessageQueue) -> None:
    """Only PostgreSQL has a transactional table that skips the log (UNLOGGED)."""
    with pytest.raises(ConfigError, match="durable=False needs PostgreSQL"):
        mq.create_queue("fast", durable=False)
    assert [q.queue_name for q in mq.list_queues()] == ["mail"]
