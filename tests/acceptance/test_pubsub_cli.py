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
            workers = json.loads(run_batchq(db_url, "status", "--json").stdout)
            return workers[0] if workers and workers[0]["jobs_done"] == 1 else None

        worker = wait_for(counted)  # refreshed after the second message: the first is counted
        assert (worker["jobs_done"], worker["jobs_failed"]) == (1, 1)
    finally:
        proc.terminate()  # SIGTERM: it exits 0 between messages
        proc.communicate(timeout=60)


def test_a_consumer_is_in_the_registry_and_stops_when_asked(db_url: str, orders: MessageQueue) -> None:
    proc = start_batchq(db_url, "consume", "--subscriber", "billing", "--wait", "120", **HANDLERS)
    try:
        status = wait_for(lambda: json.loads(run_batchq(db_url, "status", "--json").stdout))
        [worker] = status
        assert (worker["kind"], worker["serves"], worker["pid"]) == ("consume", ["orders:billing"], proc.pid)
        assert worker["state"] == "running"
        asked = run_batchq(db_url, "stop", "--queue", "orders:billing")
        assert asked.stdout == "asked 1 worker to stop\n"
        assert finished(proc, timeout=30)[0] == 0  # within about a second, not after --wait
        assert json.loads(run_batchq(db_url, "status", "--json").stdout) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
