"""Input that once slipped past batchq's checks, refused by the API on every backend (issue 9,
items 12, 13): queue names with a trailing newline, delays of the wrong type."""

from __future__ import annotations

from typing import Any

import pytest

from batchq import ConfigError, MessageQueue, Queue
from batchq.core.config import check_queue_name
from tests.support.db import job_rows

# -- item 13: queue names and delays -------------------------------------------------------

BAD_NAMES = ["default\n", "a" * 64 + "\n", "a" * 65, "\ndefault", "default\r", ""]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_queue_name_with_a_newline_is_refused(queue: Queue, db_url: str, name: str) -> None:
    with pytest.raises(ConfigError, match="bad queue name"):
        queue.enqueue("jobs:noop", queue=name)
    with pytest.raises(ConfigError, match="bad queue name"):
        check_queue_name(name)
    assert job_rows(queue) == []


def test_longest_queue_name_round_trips(queue: Queue) -> None:
    name = "q" * 63 + "z"
    queue.enqueue("jobs:noop", queue=name)
    assert [row["queue"] for row in job_rows(queue)] == [name]


NOT_DURATIONS = [True, False, [1], b"5", {"s": 1}, object(), "1 s s", float("nan"), -1, "-5"]


@pytest.mark.parametrize(
    "delay", NOT_DURATIONS, ids=lambda value: "object()" if type(value) is object else repr(value)
)
def test_delay_of_the_wrong_type_is_refused(queue: Queue, db_url: str, delay: Any) -> None:
    with pytest.raises(ConfigError, match="bad delay"):
        queue.enqueue("jobs:noop", delay=delay)
    mq = MessageQueue(db_url)
    try:
        mq.create_queue("typed")
        with pytest.raises(ConfigError, match="bad delay"):
            mq.send("typed", 1, delay=delay)
        with pytest.raises(ConfigError, match="bad vt"):
            mq.read("typed", vt=delay)
    finally:
        mq.close()
    assert job_rows(queue) == []
