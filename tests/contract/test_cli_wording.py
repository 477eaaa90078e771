"""What commands report, in words that are right: counts in the right number, what is counted
named, and a refusal that says which case it is. In-process through click's CliRunner."""

from __future__ import annotations

import logging

import pytest
from click.testing import CliRunner, Result

from batchq import MessageQueue, Queue
from batchq.cli import cli
from tests.support.rows import processing, write_row


def batchq(db_url: str, *args: str, modules: str = "jobs") -> Result:
    return CliRunner().invoke(
        cli, ["--url", db_url, *args], env={"BATCHQ_TASK_MODULES": modules}, prog_name="batchq"
    )


def test_cancel_says_whether_the_job_runs_or_does_not_exist(db_url: str, queue: Queue) -> None:
    running = write_row(queue, **processing(queue, "host-a:4242:abc"))
    result = batchq(db_url, "cancel", str(running))
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"batchq: error: job {running} was not cancelled: it is being run by host-a:4242:abc "
        f"(see `batchq explain {running}`)\n"
    )
    result = batchq(db_url, "cancel", "424242")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "batchq: error: job 424242 was not cancelled: no job has that id (it may have finished, "
        "or been cancelled or purged)\n"
    )


def test_purge_and_cancel_count_one_job_as_one(db_url: str, queue: Queue) -> None:
    queue.enqueue("jobs:noop", queue="mail")
    assert batchq(db_url, "purge", "mail", "--yes").stdout == "deleted 1 job\n"
    queue.enqueue("jobs:noop", queue="mail")
    assert batchq(db_url, "cancel", "--queue", "mail").stdout == "1 job cancelled\n"


def test_consume_reports_calls_and_messages_apart(
    db_url: str, mq: MessageQueue, caplog: pytest.LogCaptureFixture
) -> None:
    """Two messages whose handler fails on their first read: four calls, two messages done."""
    mq.subscribe("events", "audit")
    for n in (1, 2):
        mq.publish("events", {"n": n, "flaky": True})
    with caplog.at_level(logging.INFO, logger="batchq"):
        args = ("consume", "--topic", "events", "--max-messages", "4", "--max-seconds", "60", "-v")
        result = batchq(db_url, *args, modules="pubsub_handlers")
    assert result.exit_code == 0, result.stderr
    summary = [m for m in caplog.messages if "handler call" in m]
    assert summary == [
        "4 handler calls (2 ok, 2 failed); 2 messages done: 2 handled, 0 archived, 0 dropped; 0 reconnects"
    ]
