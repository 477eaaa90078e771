"""`batchq consume` as real processes: bounded runs, two consumers on one subscription, SIGTERM,
SIGKILL mid-handler under each policy, and PostgreSQL's wake-up on publish."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from batchq import MessageQueue, Queue
from batchq.jobs.timeouts import WATCHDOG_EXIT_STATUS
from batchq.mq.pubsub import failures
from tests.support.cli import invoke_batchq
from tests.support.db import sql
from tests.support.processes import assert_one_line_error, run_batchq, start_batchq, wait_for

HANDLERS = {"BATCHQ_TASK_MODULES": "pubsub_handlers", "PUBSUB_LEDGER": "1"}
SHIPPING = 1_000_000  # the ledger offset of orders/shipping (tests/apps/pubsub_handlers.py)


def ledger(db_url: str) -> list[tuple[int, int]]:
    queue = Queue(db_url)
    try:
        return [(int(n), int(pid)) for n, pid in sql(queue, "SELECT n, pid FROM test_ledger")]
    finally:
        queue.close()


def consume(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_batchq(db_url, "consume", *args, **HANDLERS)


def finished(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


@pytest.fixture
def orders(mq: MessageQueue) -> MessageQueue:
    mq.subscribe("orders", "billing", vt=2)
    mq.subscribe("orders", "shipping", policy="at_most_once")
    return mq


def test_consume_drains_and_each_subscriber_gets_every_message(db_url: str, orders: MessageQueue) -> None:
    for n in range(20):
        orders.publish("orders", {"n": n})
    result = consume(db_url, "--topic", "orders", "--wait", "0", "-v")
    assert result.returncode == 0, result.stderr
    assert "40 handler calls (40 ok, 0 failed); 40 messages done: 40 handled" in result.stderr
    assert sorted(n for n, _ in ledger(db_url)) == list(range(20)) + [SHIPPING + n for n in range(20)]


def test_consume_bounded_forms(db_url: str, orders: MessageQueue) -> None:
    for n in range(5):
        orders.publish("orders", {"n": n})
    result = consume(db_url, "--subscriber", "billing", "--max-messages", "3")
    assert result.returncode == 0, result.stderr
    assert sorted(n for n, _ in ledger(db_url)) == [0, 1, 2]

    started = time.monotonic()
    result = consume(db_url, "--subscriber", "billing", "--max-seconds", "1.5")  # then idles
    assert result.returncode == 0, result.stderr
    assert 1.5 <= time.monotonic() - started < 15
    assert sorted(n for n, _ in ledger(db_url)) == [0, 1, 2, 3, 4]

    started = time.monotonic()
    result = consume(db_url, "--subscriber", "billing", "--wait", "1")
    assert result.returncode == 0, result.stderr
    assert 1 <= time.monotonic() - started < 15


@pytest.mark.slow
def test_two_consumers_on_one_subscription_handle_each_message_once(
    db_url: str, orders: MessageQueue
) -> None:
    for n in range(200):
        orders.publish("orders", {"n": n, "sleep": 0.02})  # some work, so that both get some
    consumers = [
        start_batchq(db_url, "consume", "--subscriber", "billing", "--wait", "60", **HANDLERS)
        for _ in range(2)
    ]
    try:
        # Once 200 calls are in (a duplicate would show below), SIGTERM: each finishes its
        # message and exits, rather than idling out a --wait.
        wait_for(lambda: len(ledger(db_url)) >= 200, timeout=120, interval=0.1)
        for proc in consumers:
            proc.send_signal(signal.SIGTERM)
        for proc in consumers:
            code, err = finished(proc, timeout=120)
            assert code == 0, err
    finally:  # no consumer outlives its test
        for proc in consumers:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    rows = ledger(db_url)
    assert sorted(n for n, _ in rows) == list(range(200)), "a message was lost or handled twice"
    assert len(Counter(pid for _, pid in rows)) == 2, "the consumers did not share the work"
    assert orders.metrics("orders:billing").queue_length == 0


def test_sigterm_finishes_the_message_at_hand(db_url: str, orders: MessageQueue, tmp_path: Path) -> None:
    started = tmp_path / "started"
    orders.publish("orders", {"n": 1, "started": str(started), "sleep": 1.5})
    orders.publish("orders", {"n": 2})
    proc = start_batchq(db_url, "consume", "--subscriber", "billing", **HANDLERS)
    wait_for(started.exists)
    proc.send_signal(signal.SIGTERM)
    code, err = finished(proc)
    assert code == 0, err
    assert ledger(db_url) == [(1, proc.pid)]  # finished, and nothing more taken
    assert [m.message["n"] for m in orders.read("orders:billing", vt=30, qty=10)] == [2]


@pytest.mark.parametrize(
    ("subscriber", "offset", "redelivered"), [("billing", 0, True), ("shipping", SHIPPING, False)]
)
def test_sigkill_mid_handler(
    db_url: str, orders: MessageQueue, tmp_path: Path, subscriber: str, offset: int, redelivered: bool
) -> None:
    """at_least_once: the message comes again once its 2s visibility runs out. at_most_once: it
    was deleted before the call, so it is lost (the policy's documented price)."""
    started = tmp_path / "started"
    orders.publish("orders", {"n": 1, "started": str(started), "sleep": 60})
    proc = start_batchq(db_url, "consume", "--subscriber", subscriber, **HANDLERS)
    wait_for(started.exists)
    proc.send_signal(signal.SIGKILL)
    finished(proc)
    # at_least_once: the consumer exits once it has handled the message again (that it is then
    # gone is checked below), rather than idling out a --wait after it; at_most_once: it waits
    # past the 2s visibility for a message that must not come.
    again = ("--max-messages", "1", "--wait", "30") if redelivered else ("--wait", "4")
    result = consume(db_url, "--subscriber", subscriber, *again)
    assert result.returncode == 0, result.stderr
    calls = [n for n, _ in ledger(db_url)]
    assert calls == ([offset + 1] * (2 if redelivered else 1))
    assert orders.metrics(f"orders:{subscriber}").queue_length == 0


@pytest.mark.backends("postgresql")
def test_a_publish_wakes_a_waiting_consumer_at_once(db_url: str, orders: MessageQueue) -> None:
    proc = start_batchq(
        db_url,
        "consume",
        "--subscriber",
        "billing",
        "--poll-interval",
        "60",
        "--max-messages",
        "1",
        **HANDLERS,
    )
    time.sleep(3)  # subscribed, LISTENing and waiting
    published = time.monotonic()
    orders.publish("orders", {"n": 1})
    code, err = finished(proc)
    assert code == 0, err
    assert time.monotonic() - published < 10  # not the 60s poll
    assert ledger(db_url) == [(1, proc.pid)]


def test_consume_mistakes_are_one_line_errors(db_url: str) -> None:
    assert_one_line_error(
        run_batchq(db_url, "consume", BATCHQ_TASK_MODULES=""), "no handler modules", status=2
    )
    assert_one_line_error(consume(db_url, "--topic", "a:b"), "bad topic name", status=2)
    assert_one_line_error(consume(db_url, "--topic", "nothing"), "no @batchq.subscriber handler", status=2)


def test_status_counts_an_at_most_once_failure_once(db_url: str, orders: MessageQueue) -> None:
    proc = start_batchq(db_url, "consume", "--subscriber", "shipping", "--wait", "120", **HANDLERS)
    try:
        orders.publish("orders", {"n": 1, "fail_shipping": True})  # fails, dropped: one failure
        orders.publish("orders", {"n": 2})

        def counted() -> dict[str, int] | None:
            workers = json.loads(invoke_batchq(db_url, "status", "--json").stdout)
            return workers[0] if workers and workers[0]["jobs_done"] == 1 else None

        worker = wait_for(counted)  # refreshed after the second message: the first is counted
        assert (worker["jobs_done"], worker["jobs_failed"]) == (1, 1)
    finally:
        proc.terminate()  # SIGTERM: it exits 0 between messages
        proc.communicate(timeout=60)


def test_a_consumer_is_in_the_registry_and_stops_when_asked(db_url: str, orders: MessageQueue) -> None:
    proc = start_batchq(db_url, "consume", "--subscriber", "billing", "--wait", "120", **HANDLERS)
    try:
        status = wait_for(lambda: json.loads(invoke_batchq(db_url, "status", "--json").stdout))
        [worker] = status
        assert (worker["kind"], worker["serves"], worker["pid"]) == ("consume", ["orders:billing"], proc.pid)
        assert worker["state"] == "running"
        asked = invoke_batchq(db_url, "stop", "--queue", "orders:billing")
        assert asked.stdout == "asked 1 worker to stop\n"
        assert finished(proc, timeout=30)[0] == 0  # within about a second, not after --wait
        assert json.loads(invoke_batchq(db_url, "status", "--json").stdout) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


# -- handler timeouts (tests/apps/stuck_handlers.py) -----------------------------------------

STUCK = {"BATCHQ_TASK_MODULES": "stuck_handlers"}
STARTUP = 10.0  # a generous bound on a consumer process's start and exit on a busy machine


@pytest.mark.parametrize(
    ("subscriber", "args", "text"), [("sleeper", ("--timeout", "1s"), "1s"), ("declared", (), "500ms")]
)
def test_a_hung_handler_is_stopped_at_its_timeout(
    db_url: str, mq: MessageQueue, subscriber: str, args: tuple[str, ...], text: str
) -> None:
    """`consume --timeout`, or the handler's @subscriber(timeout=...): the call is stopped and
    counts as an error, as a job's; on its last try the message is archived with it."""
    mq.subscribe("stuck", subscriber, max_tries=1, vt=60)
    mq.publish("stuck", {"sleep": 300})
    started = time.monotonic()
    result = run_batchq(db_url, "consume", "--subscriber", subscriber, "--wait", "0", *args, **STUCK)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 1 + STARTUP
    assert f"archived after 1 try: JobTimeout: timed out after {text}" in result.stderr
    [failure] = failures(mq, "stuck", subscriber)
    assert failure.error.startswith(f"JobTimeout: timed out after {text}")


@pytest.mark.parametrize("ended_by", ["SIGTERM", "--max-seconds"])
def test_a_hung_handler_outlives_neither_sigterm_nor_max_seconds(
    db_url: str, mq: MessageQueue, tmp_path: Path, ended_by: str
) -> None:
    """Both let the message at hand finish: a hung one, only until its timeout (consumers that
    cron starts no longer pile up). The message comes again after its visibility timeout."""
    mq.subscribe("stuck", "sleeper", max_tries=3, vt=60)
    started = tmp_path / "started"
    mq.publish("stuck", {"sleep": 300, "started": str(started)})
    limit = ("--max-seconds", "1") if ended_by == "--max-seconds" else ()
    proc = start_batchq(db_url, "consume", "--subscriber", "sleeper", "--timeout", "2s", *limit, **STUCK)
    try:
        wait_for(started.exists)
        began = time.monotonic()
        if ended_by == "SIGTERM":
            proc.send_signal(signal.SIGTERM)
        code, err = finished(proc, timeout=2 + STARTUP)
    finally:
        proc.kill()
        proc.wait()
    assert code == 0, err
    assert time.monotonic() - began < 2 + STARTUP
    assert "stuck/sleeper: message" in err and "failed (try 1 of 3)" in err
    assert mq.metrics("stuck:sleeper").queue_length == 1  # hidden for 60s, then it comes again


def test_a_handler_no_signal_stops_ends_the_consumer(db_url: str, mq: MessageQueue) -> None:
    """As a job's watchdog: past the grace period the consumer records the failure (archived
    on the last try) and ends itself with exit status 4."""
    mq.subscribe("stuck", "blocked", max_tries=1, vt=60)
    mq.publish("stuck", {"sleep": 120})
    started = time.monotonic()
    result = run_batchq(
        db_url, "consume", "--subscriber", "blocked", "--timeout", "500ms", "--timeout-grace", "1s", **STUCK
    )
    assert result.returncode == WATCHDOG_EXIT_STATUS, result.stderr
    assert time.monotonic() - started < 0.5 + 1 + STARTUP
    assert "did not stop within the grace period (1s)" in result.stderr
    assert "Traceback" not in result.stderr
    [failure] = failures(mq, "stuck", "blocked")
    assert "the consumer process was ended (exit status 4)" in failure.error


def test_consume_refuses_bad_timeouts_in_one_line(db_url: str) -> None:
    for args, needle in [
        (("--timeout", "0"), "bad --timeout value '0': a timeout is more than 0"),
        (("--timeout", "soon"), "bad --timeout value 'soon'"),
        (("--timeout-grace", "-1s"), "bad --timeout-grace value '-1s'"),
    ]:
        assert_one_line_error(run_batchq(db_url, "consume", *args, **STUCK), needle, status=2)
