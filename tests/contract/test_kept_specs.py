"""enqueue keeps the checked options while they repeat (JobBuilder.kept_spec) and the row
template built from them (JobBuilder.template): what is kept must never change what is written
or what is refused."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from batchq import ConfigError, Queue
from batchq.errors import TaskNotAllowed
from batchq.jobs.tasks import Resolver
from tests.support.db import sql


def kept_results(queue: Queue) -> list[float | None]:
    return [row[0] for row in sql(queue, "SELECT keep_result FROM batchq_job ORDER BY id")]


def test_equal_options_of_other_types_are_not_the_same_options(queue: Queue) -> None:
    """keep_result=True keeps a result for a day, keep_result=1 for a second; True == 1."""
    queue.enqueue("jobs:noop", keep_result=True)
    queue.enqueue("jobs:noop", keep_result=1)
    queue.enqueue("jobs:noop", keep_result=True)
    assert kept_results(queue) == [86400.0, 1.0, 86400.0]


def test_a_kept_bad_option_is_still_refused(queue: Queue) -> None:
    queue.enqueue("jobs:noop", priority=1)
    with pytest.raises(ConfigError, match="priority"):
        queue.enqueue("jobs:noop", priority=True)


def test_an_expiry_instant_is_checked_against_the_clock_at_every_enqueue(queue: Queue) -> None:
    soon = datetime.now(timezone.utc) + timedelta(seconds=0.3)
    queue.enqueue("jobs:noop", expires=soon)
    time.sleep(0.4)
    with pytest.raises(ConfigError, match="could never start"):
        queue.enqueue("jobs:noop", expires=soon)


def test_an_unhashable_option_gets_the_usual_error(queue: Queue) -> None:
    with pytest.raises(ConfigError, match="concurrency_key"):
        queue.enqueue("jobs:noop", concurrency_key=["customer", 42])  # type: ignore[arg-type]


def test_another_allow_list_checks_the_task_again(queue: Queue) -> None:
    queue.enqueue("jobs:noop")
    queue.resolver = Resolver(["other_module"])
    with pytest.raises(TaskNotAllowed):
        queue.enqueue("jobs:noop")


def test_a_row_s_own_key_never_reaches_the_shared_template(queue: Queue) -> None:
    queue.enqueue("jobs:noop", {"n": 1}, unique_key="once")
    queue.enqueue("jobs:noop", {"n": 2})
    queue.enqueue_many("jobs:noop", [{"n": 3}], unique_keys=["twice"])
    queue.enqueue_many("jobs:noop", [{"n": 4}])
    keys = [row[0] for row in sql(queue, "SELECT unique_key FROM batchq_job ORDER BY id")]
    assert keys == ["once", None, "twice", None]


def test_a_new_partition_count_makes_a_new_template(queue: Queue) -> None:
    spec = queue.builder.spec("jobs:noop")
    assert queue.builder.template(spec)["partitions"] == 1
    queue.builder._partitions_known = (time.monotonic() + 60, 4)  # as if `batchq partitions 4` was read
    assert queue.builder.template(spec)["partitions"] == 4
