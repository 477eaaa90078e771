"""conn= with an application connection whose rows are not tuples (issue 23, item 1).

Flask apps often open PyMySQL with ``cursorclass=DictCursor``, psycopg with ``row_factory=
dict_row`` and sqlite3 with ``row_factory=sqlite3.Row``. batchq opens its own cursors of a known
row shape on such a connection: every public operation that takes conn= works, inside the
caller's transaction, whatever the connection's default.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from batchq import MessageQueue, Queue
from tests.support.db import app_connection


def _dict_factory(cur: Any, row: tuple[Any, ...]) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cur.description, row)}


def _mysql(cursor_class: str) -> Callable[[str], Any]:
    def connect(db_url: str) -> Any:
        import pymysql.cursors

        return app_connection(db_url, cursorclass=getattr(pymysql.cursors, cursor_class))

    return connect


def _postgresql(factory: str) -> Callable[[str], Any]:
    def connect(db_url: str) -> Any:
        from psycopg import rows

        conn = app_connection(db_url)
        conn.row_factory = getattr(rows, factory)
        return conn

    return connect


def _sqlite(factory: Any) -> Callable[[str], Any]:
    def connect(db_url: str) -> Any:
        conn = app_connection(db_url)
        conn.row_factory = factory
        return conn

    return connect


SHAPES: dict[str, dict[str, Callable[[str], Any]]] = {
    "mysql": {
        "DictCursor": _mysql("DictCursor"),
        "SSDictCursor": _mysql("SSDictCursor"),
    },
    "postgresql": {"dict_row": _postgresql("dict_row"), "namedtuple_row": _postgresql("namedtuple_row")},
    "sqlite": {"sqlite3.Row": _sqlite(sqlite3.Row), "dict factory": _sqlite(_dict_factory)},
}


@pytest.fixture(params=[0, 1], ids=["dicts", "other"])
def shaped(request: pytest.FixtureRequest, backend_name: str, db_url: str) -> Iterator[Any]:
    """The application's connection, in each of two row shapes its backend's driver offers."""
    conn = list(SHAPES[backend_name].values())[request.param](db_url)
    yield conn
    conn.close()


def test_every_job_operation_on_a_connection_of_another_row_shape(
    queue: Queue, shaped: Any, backend_name: str
) -> None:
    queue.create_queue("typed", schema={"type": "object"})
    queue.configure("bounded", max_length=10, overflow="reject")
    ids = [
        queue.enqueue("jobs:noop", {"n": 1}, conn=shaped),
        queue.enqueue("jobs:noop", {"n": 2}, unique_key="k1", conn=shaped),
        queue.enqueue("jobs:noop", {"n": 3}, queue="typed", conn=shaped),
        queue.enqueue("jobs:noop", {"n": 4}, queue="bounded", conn=shaped),
    ]
    assert queue.enqueue("jobs:noop", {"n": 5}, unique_key="k1", conn=shaped) == ids[1]
    assert queue.enqueue_many("jobs:noop", [{"n": 6}, {"n": 7}], conn=shaped) == 2
    assert queue.enqueue_many("jobs:noop", [{"n": 8}], unique_keys=["k2"], conn=shaped) == 1
    assert queue.enqueue_many("jobs:noop", [{"n": 9}], queue="bounded", conn=shaped) == 1
    assert queue.payload_type("typed", conn=shaped).text is not None
    shaped.commit()
    assert sum(s.ready for s in queue.stats()) == 8  # the second "k1" wrote nothing


def test_every_message_operation_on_a_connection_of_another_row_shape(
    db_url: str, shaped: Any, backend_name: str
) -> None:
    mq = MessageQueue(db_url)
    try:
        # Before the app's transaction takes SQLite's write lock (and MySQL's lock on the queues'
        # rows: a read on conn= of a queue made in the same transaction waits for it).
        mq.subscribe("topic", "sub")
        mq.create_queue("shaped")
        mq.create_queue("typed", schema={"type": "object"})
        assert mq.create_queue("made", conn=shaped)
        assert mq.configure_queue("made", max_length=100, conn=shaped) == 0
        first = mq.send("shaped", {"n": 1}, conn=shaped)
        batch = mq.send_batch("shaped", [{"n": 2}, {"n": 3}, {"n": 4}, {"n": 5}], conn=shaped)
        assert mq.send("typed", {"n": 0}, conn=shaped) > 0
        assert mq.get("shaped", first, conn=shaped).message == {"n": 1}  # type: ignore[union-attr]
        read = mq.read("shaped", vt=30, qty=2, conn=shaped)
        assert [m.message for m in read] == [{"n": 1}, {"n": 2}]
        assert mq.set_vt("shaped", first, 0, read_ct=1, conn=shaped) is not None
        assert mq.delete("shaped", first, conn=shaped)
        assert mq.archive("shaped", batch[0], conn=shaped)
        assert mq.delete_batch("shaped", [batch[1]], conn=shaped) == [batch[1]]
        assert mq.archive_batch("shaped", [batch[2]], conn=shaped) == [batch[2]]
        assert mq.pop("shaped", conn=shaped).message == {"n": 5}  # type: ignore[union-attr]
        archived = mq.read_archive("shaped", conn=shaped)
        assert sorted(a.msg_id for a in archived) == sorted([batch[0], batch[2]])
        assert mq.publish("topic", {"n": 6}, conn=shaped) == 1
        assert mq.purge_queue("typed", conn=shaped) == 1
        assert mq.drop_queue("typed", conn=shaped)
        shaped.commit()
        assert [m.message for m in mq.read("topic:sub", vt=30)] == [{"n": 6}]
        queues = {q.queue_name: q.max_length for q in mq.list_queues()}
        assert "typed" not in queues and queues["made"] == 100
    finally:
        mq.close()


def test_a_rolled_back_transaction_of_another_row_shape_leaves_nothing(
    queue: Queue, db_url: str, shaped: Any
) -> None:
    """The job and the message exist exactly when the app's transaction commits, whatever its
    connection's row shape: rolled back, nothing of them is left."""
    mq = MessageQueue(db_url)
    try:
        mq.create_queue("shaped")  # before the app's transaction takes its locks
        queue.enqueue("jobs:noop", {"n": 1}, conn=shaped)
        queue.enqueue_many("jobs:noop", [{"n": 2}, {"n": 3}], conn=shaped)
        mq.send("shaped", {"n": 4}, conn=shaped)
        shaped.rollback()
        assert sum(s.ready for s in queue.stats()) == 0
        assert mq.read("shaped", vt=30) == []
    finally:
        mq.close()
