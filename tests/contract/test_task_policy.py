"""A task's own retry policy (issue 12): @task(max_errors=..., backoff=...) as defaults."""

from __future__ import annotations

import pytest

import batchq
from batchq import ConfigError, Queue
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import job_rows, run_query


def test_a_tasks_max_errors_is_the_default_and_enqueue_overrides_it(queue: Queue) -> None:
    queue.enqueue("jobs:fail_with_policy")
    queue.enqueue("jobs:fail_with_policy", max_errors=5)
    queue.enqueue("jobs:fail")  # no policy: batchq's default
    assert [row["max_errors"] for row in job_rows(queue)] == [2, 5, 10]


def test_a_tasks_backoff_wins_over_runs(queue: Queue) -> None:
    job_id = queue.enqueue("jobs:fail_with_policy")
    Worker(queue, RunOptions(backoff_base=0)).run()
    [row] = job_rows(queue)
    assert (row["status"], row["error_count"]) == ("scheduled", 1)  # waits its own minute
    [(seconds,)] = run_query(queue, "job_seconds_until_due", {"id": job_id})
    assert float(seconds) == pytest.approx(60, abs=5)
    run_query(queue, "jobs_make_due")
    Worker(queue, RunOptions(backoff_base=0)).run()
    assert job_rows(queue)[0]["status"] == "failed"  # out of its 2 tries


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"max_errors": 0}, "bad max_errors 0"),
        ({"max_errors": True}, "bad max_errors"),
        ({"backoff": "soon"}, "backoff"),
    ],
)
def test_a_bad_policy_is_refused_where_the_task_is_defined(policy: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        batchq.task(**policy)  # type: ignore[arg-type]
