"""`batchq enqueue` on a typed queue: a payload that does not match is one line, nothing written."""

from __future__ import annotations

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows
from tests.support.processes import assert_one_line_error

QTY = {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}, "required": ["qty"]}


def test_enqueue_of_a_bad_payload_is_one_line(db_url: str, queue: Queue) -> None:
    queue.create_queue("orders", schema=QTY)
    result = invoke_batchq(db_url, "enqueue", "--queue", "orders", "jobs:noop", '{"qty": -1}')
    assert_one_line_error(result, "$.qty: -1 is less than the minimum of 1", "queue 'orders'", status=2)
    assert job_rows(queue) == []
    assert invoke_batchq(db_url, "enqueue", "--queue", "orders", "jobs:noop", '{"qty": 2}').returncode == 0
    assert len(job_rows(queue)) == 1
