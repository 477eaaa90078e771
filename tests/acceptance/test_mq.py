"""The message queue with real processes: a message is never shared, a bound holds under
concurrent producers, and a consumer killed before its commit leaves no effect behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from batchq import MessageQueue, Queue
from tests.support.cli import invoke_batchq
from tests.support.db import ledger, run_query
from tests.support.messages import Q
from tests.support.processes import APPS_DIR, assert_one_line_error, batchq_env, wait_for

# -- several processes ---------------------------------------------------------------


@pytest.mark.slow
def test_concurrent_reader_processes_never_share_a_message(db_url: str, mq: MessageQueue) -> None:
    sent = mq.send_batch(Q, [{"n": n} for n in range(300)])
    readers = [
        subprocess.Popen(
            [sys.executable, str(APPS_DIR / "mq_reader.py"), db_url, Q, str(qty)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for qty in (1, 3, 5, 1, 2, 4)
    ]
    for reader in readers:  # all connected: start them together
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
    for reader in readers:
        assert reader.stdin is not None
        reader.stdin.write("go\n")
        reader.stdin.close()
    per_reader: list[list[int]] = []
    for reader in readers:
        assert reader.stdout is not None and reader.stderr is not None
        out = reader.stdout.read()
        assert reader.wait(timeout=120) == 0, reader.stderr.read()
        reader.stderr.close()
        reader.stdout.close()
        per_reader.append(json.loads(out))
    received = [msg_id for got in per_reader for msg_id in got]
    assert len(received) == len(set(received)), "a message was read by two consumers"
    assert sorted(received) == sent
    assert sum(1 for got in per_reader if got) >= 3, f"the readers did not overlap: {per_reader}"
    assert mq.metrics(Q).queue_length == 0


# -- bounded queues --------------------------------------------------------------------

BOUND = 6
PRODUCERS, CONSUMERS, PER_PRODUCER = 8, 2, 30


@pytest.mark.slow
@pytest.mark.parametrize("overflow", ["drop_oldest", "reject"])
def test_bound_holds_under_concurrent_producers_and_consumers(
    db_url: str, mq: MessageQueue, tmp_path: Path, overflow: str
) -> None:
    """8 producer and 2 consumer processes on a queue of max_length 6: a checker process never
    samples more than 6 messages, and every message sent was read or dropped (archived as
    'overflow'); with 'reject' none is dropped and the producers' retries get every one through."""
    ring = "ring"
    mq.create_queue(ring, max_length=BOUND, overflow=overflow)
    stop = tmp_path / "stop"
    checker = _start("checker", db_url, ring, str(stop))
    consumers = [_start("consumer", db_url, ring, str(stop)) for _ in range(CONSUMERS)]
    producers = [_start("producer", db_url, ring, f"{p} {PER_PRODUCER} {tmp_path}") for p in range(PRODUCERS)]
    everyone = [checker, *consumers, *producers]
    for process in everyone:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    for process in everyone:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.close()
    # The consumers read once the queue has overflowed (a message dropped, or a send refused):
    # neither fast consumers nor producers slowed by a busy machine keep it below its bound.
    wait_for(lambda: _overflowed(mq, ring, tmp_path, overflow), timeout=120)
    (tmp_path / "gate").touch()
    produced = [_result(process) for process in producers]
    stop.touch()
    received = [tuple(pair) for process in consumers for pair in _result(process)]
    sampled = _result(checker)

    sent = {tuple(pair) for result in produced for pair in result["sent"]}
    dropped = [(m.message["p"], m.message["n"]) for m in _archive(mq, ring, "overflow")]
    assert len(sent) == PRODUCERS * PER_PRODUCER
    assert sampled["samples"] >= 20, sampled
    assert sampled["max"] <= BOUND, f"the checker saw {sampled['max']} messages in a queue of {BOUND}"
    assert len(received) == len(set(received)), "a message was read twice"
    assert set(received) | set(dropped) == sent, "a message was lost"
    assert len(dropped) == len(set(dropped))
    if overflow == "reject":
        assert dropped == [] and sum(result["rejected"] for result in produced) > 0
        assert sorted(received) == sorted(sent)
    else:
        assert dropped, "the queue never overflowed: the test proves nothing"
    metrics = mq.metrics(ring)
    assert (metrics.queue_length, metrics.total_messages) == (0, len(sent))
    print(
        f"{overflow}: {len(sent)} sent, {len(received)} read, {len(dropped)} dropped "
        f"({len(set(received) & set(dropped))} both read and then dropped while held), "
        f"{sum(result['rejected'] for result in produced)} rejected sends retried; "
        f"checker max {sampled['max']} of {BOUND} over {sampled['samples']} samples"
    )


def _overflowed(mq: MessageQueue, queue: str, folder: Path, overflow: str) -> bool:
    if overflow == "reject":
        return (folder / "rejected").exists()
    return bool(_archive(mq, queue, "overflow"))


def _start(role: str, url: str, queue: str, arg: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(APPS_DIR / "mq_bounded.py"), role, url, queue, arg],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=batchq_env(url),
    )


def _result(process: subprocess.Popen[str]) -> Any:
    process.stdin = None  # closed at the start: communicate() must not flush it
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    return json.loads(out)


def _archive(mq: MessageQueue, queue: str, reason: str) -> list[Any]:
    """Every archived message of a queue with a reason, page by page."""
    found: list[Any] = []
    while True:
        page = mq.read_archive(queue, reason=reason, after_id=found[-1].msg_id if found else 0, limit=50)
        if not page:
            return found
        found.extend(page)


# -- exactly-once effects in the database ----------------------------------------------------


@pytest.mark.slow
def test_consumer_killed_between_effect_and_commit_leaves_no_effect(db_url: str, mq: MessageQueue) -> None:
    """read + effect + delete in the application's transaction, SIGKILL before the commit: the
    effect is absent, the message is readable again (its read rolled back too), and a second
    consumer handles it once."""
    msg_id = mq.send(Q, {"n": 7})
    crashing = subprocess.Popen(
        [sys.executable, str(APPS_DIR / "mq_effect.py"), db_url, Q, "crash"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=batchq_env(db_url),
    )
    assert crashing.stdout is not None
    assert crashing.stdout.readline().strip() == "effect written", crashing.stderr
    os.kill(crashing.pid, signal.SIGKILL)
    crashing.wait(timeout=30)
    crashing.stdout.close()
    assert crashing.stderr is not None
    crashing.stderr.close()

    queue = Queue(db_url)
    assert ledger(queue) == []  # the effect rolled back with the transaction
    second = _effect(db_url, "commit")
    assert second == {"n": 7, "read_ct": 1}  # the killed read never committed either
    assert ledger(queue) == [7]
    assert mq.get(Q, msg_id) is None
    # Nothing left: the queue holds no message, visible or not (so none can come back when the
    # killed read's vt=30 runs out), and a consumer's read finds none: handled once. The queue's
    # length stands for waiting out that vt: a read then could only return a row counted here.
    assert mq.metrics(Q).queue_length == 0
    assert _effect(db_url, "commit", wait=0) is None
    assert ledger(queue) == [7]
    queue.close()


def _effect(url: str, mode: str, wait: float = 30) -> Any:
    """mq_effect.py in ``mode``; a "commit" waits up to ``wait`` seconds for a message."""
    done = subprocess.run(
        [sys.executable, str(APPS_DIR / "mq_effect.py"), url, Q, mode, str(wait)],
        capture_output=True,
        text=True,
        timeout=60,
        env=batchq_env(url),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- the CLI ---------------------------------------------------------------------------------


def test_mq_prune_deletes_what_is_older_and_is_quiet(db_url: str, mq: MessageQueue) -> None:
    old = mq.send_batch(Q, list(range(5)))
    mq.archive_batch(Q, old)
    run_query(Queue(db_url), "mq_archive_backdate", {"queue": Q, "days": 40})
    fresh = mq.send(Q, "fresh")
    mq.archive(Q, fresh)

    done = invoke_batchq(db_url, "mq", "prune", "--older-than", "30d", "--batch", "2")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")  # cron mails nothing
    assert [m.msg_id for m in mq.read_archive(Q)] == [fresh]
    told = invoke_batchq(db_url, "mq", "prune", "--older-than", "0", "-v")
    assert told.returncode == 0 and "pruned 1 archived message" in told.stderr

    bad = invoke_batchq(db_url, "mq", "prune", "--older-than", "1d", "--queue", "no spaces")
    assert_one_line_error(bad, "bad queue name", status=2)
