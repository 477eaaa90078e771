"""`batchq run` serves the queues it is named (default: `default`), and says so when it found
nothing while other queues have due jobs (issue 24 part 5). In-process through click's CliRunner."""

from __future__ import annotations

import logging

import pytest
from click.testing import CliRunner, Result

from batchq import Queue
from batchq.cli import cli


def batchq(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(
        cli, ["--url", db_url, *args], env={"BATCHQ_TASK_MODULES": "jobs"}, prog_name="batchq"
    )


def hints(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [m for m in caplog.messages if "other queues" in m]


def test_a_verbose_run_that_found_nothing_names_the_queues_with_due_jobs(
    db_url: str, queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    for _ in range(3):
        queue.enqueue("jobs:noop", queue="mailq")
    queue.enqueue("jobs:noop", queue="reports")
    queue.enqueue("jobs:noop", queue="later", delay="1h")  # not due: not named
    with caplog.at_level(logging.INFO, logger="batchq"):
        result = batchq(db_url, "-v", "run")
    assert (result.exit_code, result.stdout) == (0, "")
    assert [m for m in caplog.messages if m.startswith("processed")][0].startswith("processed 0 jobs")
    assert hints(caplog) == [
        "this run serves default; jobs are due in other queues: mailq (3 jobs), reports (1 job). "
        "Serve them with --queue mailq --queue reports (repeat --queue for each queue a worker "
        "should take jobs from)"
    ]
    assert [s.ready for s in queue.stats()] == [0, 3, 1]  # nothing of theirs was run


def test_the_hint_does_as_it_says(db_url: str, queue: Queue, caplog: pytest.LogCaptureFixture) -> None:
    queue.enqueue("jobs:noop", queue="mailq")
    with caplog.at_level(logging.INFO, logger="batchq"):
        result = batchq(db_url, "-v", "run", "--queue", "default", "--queue", "mailq")
    assert result.exit_code == 0
    assert any(m.startswith("processed 1 job ") for m in caplog.messages), caplog.messages
    assert hints(caplog) == []
    assert queue.stats() == []  # its job ran and was deleted


def test_no_hint_without_v_when_all_is_well_or_when_the_run_did_work(
    db_url: str, queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    """Cron mails what run prints: a worker of `default` beside a worker of `mailq` stays quiet."""
    queue.enqueue("jobs:noop", queue="mailq")
    quiet = batchq(db_url, "run")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
    queue.enqueue("jobs:noop")
    with caplog.at_level(logging.INFO, logger="batchq"):
        busy = batchq(db_url, "-v", "run")
    assert busy.exit_code == 0 and hints(caplog) == []  # it found work: its queue is served


def test_a_paused_queue_or_one_with_only_delayed_jobs_is_not_named(
    db_url: str, queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    queue.enqueue("jobs:noop", queue="soon", delay="10m")
    queue.enqueue("jobs:noop", queue="held")
    queue.pause("held")
    with caplog.at_level(logging.INFO, logger="batchq"):
        assert batchq(db_url, "-v", "run").exit_code == 0
    assert hints(caplog) == []


def test_a_pattern_is_refused_with_how_to_serve_several_queues(db_url: str) -> None:
    result = batchq(db_url, "run", "--queue", "*")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "batchq: error: --queue takes a queue's name, not a pattern: repeat it for each queue to "
        "serve (--queue default --queue mail); `batchq stats` lists the queues\n"
    )
