"""The message queue on MySQL/MariaDB: its plans, and servers without SKIP LOCKED."""

from __future__ import annotations

import pytest

from batchq import ConfigError, MessageQueue
from tests.support.messages import Q, ids, raw, read_plan_backlog


@pytest.mark.backends("mysql")  # only MySQL/MariaDB servers may lack SKIP LOCKED
def test_reads_without_skip_locked(backend_name: str, mq: MessageQueue) -> None:
    """Older MySQL/MariaDB servers lock with plain FOR UPDATE: slower, the same results."""
    sent = mq.send_batch(Q, [{"kind": "a"}, {"kind": "b"}, {"kind": "a"}])
    mq.backend.conn  # noqa: B018 - connect first: connecting detects SKIP LOCKED
    mq.backend.skip_locked = False
    assert ids(mq.read(Q, vt=30, qty=5, where={"kind": "a"})) == [sent[0], sent[2]]
    popped = mq.pop(Q)
    assert popped is not None and popped.msg_id == sent[1]
    assert mq.pop(Q) is None


@pytest.mark.backends("mysql")
def test_read_plan_walks_the_read_index(mq: MessageQueue) -> None:
    """FIFO among visible messages without sorting the backlog (an index regression fails here)."""
    params = read_plan_backlog(mq)
    statement = mq.backend.sql("mq_read").replace("FOR UPDATE SKIP LOCKED", "")
    [(plan,)] = raw(mq.backend, "EXPLAIN FORMAT=JSON " + statement, params)
    assert '"key": "PRIMARY"' in plan and "filesort" not in plan, plan


@pytest.mark.backends("mysql")
def test_a_non_durable_queue_is_refused(mq: MessageQueue) -> None:
    """Only PostgreSQL has a transactional table that skips the log (UNLOGGED)."""
    with pytest.raises(ConfigError, match="durable=False needs PostgreSQL"):
        mq.create_queue("fast", durable=False)
    assert [q.queue_name for q in mq.list_queues()] == ["mail"]
