"""Cancel by filter (issue 12): every waiting job that matches, never a running or failed one."""

from __future__ import annotations

import pytest

from batchq import ConfigError, Queue, TaskError
from batchq.queue import CANCEL_BATCH
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows, sql
from tests.support.processes import assert_one_line_error
from tests.support.rows import dead_worker, processing, write_row


def statuses(queue: Queue) -> list[tuple[str, str, str]]:
    return sorted((row["queue"], row["task"], row["status"]) for row in job_rows(queue))


def test_waiting_jobs_of_the_queue_go_and_nothing_else(queue: Queue) -> None:
    queue.enqueue("jobs:noop", queue="mail")  # ready
    queue.enqueue("jobs:noop", queue="mail", delay="1h")  # scheduled
    queue.enqueue("jobs:noop", queue="mail", concurrency_key="k")  # blocked
    queue.enqueue("jobs:echo", 1, queue="mail")
    queue.enqueue("jobs:noop", queue="other")
    claimed = write_row(queue, **processing(queue, dead_worker()))  # never cancelled
    failed = write_row(queue, status="failed")  # gc-error's
    sql(queue, f"UPDATE batchq_job SET queue = 'mail' WHERE id IN ({claimed}, {failed})")
    assert queue.cancel_where("mail", task="jobs:noop") == 3
    assert queue.cancel_where("mail") == 1  # jobs:echo
    assert statuses(queue) == [
        ("mail", "jobs:noop", "failed"),
        ("mail", "jobs:noop", "processing"),
        ("other", "jobs:noop", "ready"),
    ]


def test_older_than_reads_the_database_clock(queue: Queue) -> None:
    queue.enqueue("jobs:noop")
    assert queue.cancel_where("default", older_than="1h") == 0
    assert queue.cancel_where("default", older_than=0) == 1


def test_a_task_no_longer_in_the_code_can_be_cancelled_by_name(queue: Queue) -> None:
    write_row(queue, task="gone_module:old_task")
    assert queue.cancel_where("default", task="gone_module:old_task") == 1


def test_many_jobs_go_in_bounded_batches(queue: Queue) -> None:
    queue.enqueue_many("jobs:noop", range(CANCEL_BATCH * 2 + 5))
    assert queue.cancel_where("default") == CANCEL_BATCH * 2 + 5
    assert job_rows(queue) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"queue": "bad queue"}, ConfigError, "bad queue name"),
        ({"queue": "default", "task": "not a task"}, TaskError, "bad task name"),
        ({"queue": "default", "older_than": "soon"}, ConfigError, "older_than"),
    ],
)
def test_bad_filters_are_refused_before_anything_is_deleted(
    queue: Queue, kwargs: dict[str, str], error: type[Exception], message: str
) -> None:
    queue.enqueue("jobs:noop")
    kwargs = dict(kwargs)  # the parameters are shared by every backend's run
    name = kwargs.pop("queue")
    with pytest.raises(error, match=message):
        queue.cancel_where(name, **kwargs)  # type: ignore[arg-type]
    assert len(job_rows(queue)) == 1


def test_the_cli_cancels_by_filter_and_says_how_many(queue: Queue, db_url: str) -> None:
    for _ in range(3):
        queue.enqueue("jobs:noop", queue="mail")
    done = invoke_batchq(db_url, "cancel", "--queue", "mail", "--task", "jobs:noop")
    assert (done.returncode, done.stdout, done.stderr) == (0, "3 jobs cancelled\n", "")
    assert invoke_batchq(db_url, "cancel", "--task", "jobs:noop").returncode == 2  # no --queue
    assert invoke_batchq(db_url, "cancel", "7", "--queue", "mail").returncode == 2  # both forms
    bad = invoke_batchq(db_url, "cancel", "--queue", "mail", "--older-than", "soon")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "soon" in bad.stderr
    assert_one_line_error(invoke_batchq(db_url, "cancel", "--queue", "bad queue"), "bad queue name", status=2)
