"""The message queue's tests: the queue the mq fixture creates, and a backlog for plan checks."""

from __future__ import annotations

from typing import Any

from batchq import MessageQueue

Q = "mail"  # the queue the mq fixture creates


def ids(messages: list[Any]) -> list[int]:
    return [m.msg_id for m in messages]


def raw(backend: Any, statement: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Run a statement on a backend's own connection; its rows, if any."""
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute(statement, params)
        rows = [tuple(row) for row in cur.fetchall()] if cur.description else []
        cur.close()
    return rows


def read_plan_backlog(mq: MessageQueue) -> dict[str, Any]:
    """A backlog, other queues, held rows at the head and fresh statistics, as the planner would
    see them in production; returns mq_read's parameters for EXPLAIN."""
    from tests.support.queries import query

    mq.create_queue("other")
    for name in (Q, "other"):
        mq.send_batch(name, [{"n": n} for n in range(500)])
    mq.read(Q, vt=30, qty=50)  # some held rows at the head
    raw(mq.backend, query(mq.backend.dialect, "analyze_messages"), {})
    return {
        "queue": Q,
        "qty": 5,
        "where": None,
        "where_paths": None,
        "vt": 0.0,
    }
