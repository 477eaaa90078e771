"""The message queue on PostgreSQL: what only this dialect shows."""

from __future__ import annotations

import pytest

from batchq import ConfigError, MessageQueue
from tests.support.messages import Q, ids, raw, read_plan_backlog


@pytest.mark.backends("postgresql")
def test_read_plan_walks_the_read_index(mq: MessageQueue) -> None:
    """FIFO among visible messages without sorting the backlog (an index regression fails here)."""
    params = read_plan_backlog(mq)
    plan = " ".join(str(row) for row in raw(mq.backend, "EXPLAIN " + mq.backend.sql("mq_read"), params))
    # Either index walks ids in order (the planner picks by statistics): no Sort of the backlog.
    # The UNLOGGED table of non-durable queues inherits batchq_message: a Merge Append of the two
    # tables' index walks keeps id order (its "Sort Key" line is no Sort node).
    assert "Index Scan" in plan and "Sort  (" not in plan, plan


@pytest.mark.backends("postgresql")
def test_a_non_durable_queue_lives_in_the_unlogged_table(mq: MessageQueue) -> None:
    """durable=False: messages go to batchq_message_unlogged (UNLOGGED, emptied by a crash), and
    every operation reaches them through batchq_message, which it inherits."""
    assert raw(
        mq.backend, "SELECT relpersistence FROM pg_class WHERE relname = 'batchq_message_unlogged'", {}
    ) == [("u",)]
    fast = "fast"
    assert mq.create_queue(fast, durable=False, max_length=3) is True
    assert mq.create_queue(fast, durable=False, max_length=3) is False
    with pytest.raises(ConfigError, match="durability is fixed"):
        mq.create_queue(fast, durable=True, max_length=3)
    durable_id = mq.send(Q, "logged")
    sent = [mq.send(fast, {"n": n}) for n in range(5)]
    assert min(sent) > durable_id  # one sequence: ids stay unique in the archive
    counts = raw(
        mq.backend,
        "SELECT (SELECT COUNT(*) FROM ONLY batchq_message), (SELECT COUNT(*) FROM batchq_message_unlogged)",
        {},
    )
    assert counts == [(1, 3)]  # the bound held: two dropped
    assert [m.message for m in mq.read_archive(fast, reason="overflow")] == [{"n": 0}, {"n": 1}]

    first, second = mq.read(fast, vt=30, qty=2)
    assert mq.archive(fast, first.msg_id) is True
    assert mq.delete(fast, second.msg_id) is True
    assert mq.set_vt(fast, sent[4], 0) is not None
    popped = mq.pop(fast)
    assert popped is not None and popped.msg_id == sent[4]
    metrics = mq.metrics(fast)
    assert (metrics.queue_length, metrics.total_messages) == (0, 5)
    [info] = [q for q in mq.list_queues() if q.queue_name == fast]
    assert (info.durable, info.max_length) == (False, 3)
    mq.send(fast, "again")
    assert mq.drop_queue(fast) is True
    assert raw(mq.backend, "SELECT COUNT(*) FROM batchq_message_unlogged", {}) == [(0,)]
    assert ids(mq.read(Q, vt=30)) == [durable_id]
