"""MySQL/MariaDB payload sizes as they go on the wire: the size check refuses exactly what
max_allowed_packet would, before sending, on batchq's connection or the caller's (issue 9, item 6)."""

from __future__ import annotations

import pytest

from batchq import Queue
from batchq.stores.jobs import enqueue_statement
from tests.support.db import app_connection, job_rows, run_query, sql
from tests.support.rows import app_write, enqueue_size_fits, json_string_of


@pytest.mark.backends("mysql")
def test_mysql_size_check_is_exactly_what_the_server_accepts(queue: Queue, db_url: str) -> None:
    from batchq import PayloadError

    [(packet,)] = run_query(queue, "max_allowed_packet")
    low, high = int(packet) // 2 - 4096, int(packet) // 2  # hex doubles a payload on the wire
    assert enqueue_size_fits(queue, low) and not enqueue_size_fits(queue, high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if enqueue_size_fits(queue, middle) else (low, middle)
    largest = low

    # The largest payload the check allows is stored whole...
    job_id = queue.enqueue("jobs:noop", json_string_of(largest))
    [(stored,)] = sql(queue, f"SELECT LENGTH(payload) FROM batchq_job WHERE id = {job_id}")
    assert stored == largest
    # ... one byte more is refused before anything is sent, and the connection lives on.
    with pytest.raises(PayloadError, match="more than this database accepts"):
        queue.enqueue("jobs:noop", json_string_of(largest + 1))
    assert [row["id"] for row in job_rows(queue)] == [job_id]
    assert queue.enqueue("jobs:noop", "still usable") > job_id

    # And that statement is indeed one the server refuses (it then drops the connection).
    import pymysql

    template = queue.builder.template(queue.builder.spec("jobs:noop", max_errors=10))
    row = queue.builder.row(template, json_string_of(largest + 1))
    throwaway = app_connection(db_url)
    with pytest.raises(pymysql.err.OperationalError) as refused, throwaway.cursor() as cur:
        cur.execute(queue.backend.sql(enqueue_statement("enqueue", row)), row)
    assert refused.value.args[0] in (1153, 2006, 2013)
    throwaway.close()


@pytest.mark.backends("mysql")
@pytest.mark.parametrize("mebibytes", [8.5, 12, 15.9])
def test_mysql_payloads_between_8_and_16_mib_are_refused_before_sending(
    queue: Queue, db_url: str, mebibytes: float
) -> None:
    from batchq import PayloadError

    payload = json_string_of(int(mebibytes * 1024 * 1024))
    app = app_connection(db_url)
    app_write(app, 1)
    with pytest.raises(PayloadError, match="max_allowed_packet"):
        queue.enqueue("jobs:noop", payload, conn=app)
    with pytest.raises(PayloadError, match="max_allowed_packet"):
        queue.enqueue_many("jobs:noop", ["small", payload], conn=app)
    kept = queue.enqueue("jobs:noop", "small", conn=app)
    app.commit()  # the application's transaction is intact: its earlier write commits
    app.close()
    assert [r["id"] for r in job_rows(queue)] == [kept]
    assert sql(queue, "SELECT n FROM test_ledger") == [(1,)]
    with pytest.raises(PayloadError):
        queue.enqueue_many("jobs:noop", ["small", payload])
    assert [r["id"] for r in job_rows(queue)] == [kept]


@pytest.mark.backends("mysql")
def test_mysql_enqueue_many_sends_rows_near_the_limit_one_per_statement(queue: Queue) -> None:
    from batchq import PayloadError

    [(packet,)] = run_query(queue, "max_allowed_packet")
    size = int(packet) // 2 - 1024
    assert queue.enqueue_many("jobs:noop", [json_string_of(size)] * 2 + ["small"]) == 3
    assert len(job_rows(queue)) == 3
    with pytest.raises(PayloadError):
        queue.enqueue_many("jobs:noop", ["small", json_string_of(int(packet) // 2 + 1024)])
    assert len(job_rows(queue)) == 3


@pytest.mark.backends("mysql")
def test_mysql_enqueue_on_the_callers_connection_needs_no_connection_of_its_own(
    queue: Queue, db_url: str
) -> None:
    """The URL's credentials may differ from the application's: batchq asks the app's session."""
    from batchq import MessageQueue
    from batchq.core.config import parse_url

    url = parse_url(db_url)
    unusable = f"mysql://nobody:wrong@{url.host}:{url.port or 3306}/{url.database}"
    app = app_connection(db_url)
    other = Queue(unusable, task_modules=["jobs"])
    first = other.enqueue("jobs:noop", {"n": 1}, conn=app)
    assert other.enqueue_many("jobs:noop", [1, 2], conn=app) == 2
    MessageQueue(db_url).create_queue("rows")
    MessageQueue(unusable).send("rows", {"n": 1}, conn=app)
    app.commit()
    app.close()
    other.close()
    assert [r["id"] for r in job_rows(queue)][0] == first and len(job_rows(queue)) == 3
