"""enqueue_many and send_batch say which payload of a batch they refuse the same way, counting
from 1: "job 2 of 3", "message 2 of 3" (issue 23, item 6)."""

from __future__ import annotations

from typing import Any

import pytest

from batchq import MessageQueue, PayloadError, PayloadInvalid, Queue
from tests.support.db import job_rows

BAD_SECOND: list[Any] = [{"n": 1}, {"n": "two"}, {"n": 3}]


def test_typed_batches_count_from_one(queue: Queue, db_url: str) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    queue.create_queue("typed", schema=schema)
    with pytest.raises(PayloadInvalid, match=r"^job 2 of 3 does not match the type of queue 'typed': \$\.n"):
        queue.enqueue_many("jobs:noop", BAD_SECOND, queue="typed")
    mq = MessageQueue(db_url)
    try:
        mq.create_queue("typed", schema=schema)
        with pytest.raises(PayloadInvalid, match=r"^message 2 of 3 does not match the type of queue 'typed'"):
            mq.send_batch("typed", BAD_SECOND)
        with pytest.raises(PayloadInvalid, match=r"^message does not match"):  # one: no number
            mq.send("typed", {"n": "one"})
    finally:
        mq.close()
    with pytest.raises(PayloadInvalid, match=r"^payload does not match"):
        queue.enqueue("jobs:noop", {"n": "one"}, queue="typed")
    assert job_rows(queue) == []


@pytest.mark.parametrize("bad", ["a\x00b", {1, 2}], ids=["nul", "set"])
def test_payloads_that_cannot_be_stored_are_numbered_too(queue: Queue, db_url: str, bad: Any) -> None:
    with pytest.raises(PayloadError, match=r"^job 2 of 3: payload "):
        queue.enqueue_many("jobs:noop", [1, bad, 3])
    mq = MessageQueue(db_url)
    try:
        mq.create_queue("plain")
        with pytest.raises(PayloadError, match=r"^message 2 of 3: payload "):
            mq.send_batch("plain", [1, bad, 3])
    finally:
        mq.close()
    assert job_rows(queue) == []
