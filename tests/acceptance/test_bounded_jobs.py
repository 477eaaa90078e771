"""A bounded job queue under 8 producer processes and 2 `batchq run` workers: the bound holds at
every sample a checker process takes, and every job enqueued either ran once or was dropped
(failed, with the reason, for gc-error)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.parse
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.runtime.sweeps import failure_groups
from tests.support.cli import invoke_batchq
from tests.support.dashboard import dashboard
from tests.support.db import ledger, run_query, sql
from tests.support.processes import APPS_DIR, batchq_env, start_batchq, wait_for

Q = "bounded"
BOUND, PRODUCERS, PER_PRODUCER = 6, 8, 25


@pytest.mark.slow
@pytest.mark.parametrize("overflow", ["drop_oldest", "reject"])
def test_bound_holds_under_concurrent_producers_and_workers(
    db_url: str, queue: Queue, tmp_path: Path, overflow: str
) -> None:
    queue.configure(Q, max_length=BOUND, overflow=overflow)
    stop = tmp_path / "stop"
    checker = _start("checker", db_url, str(stop))
    producers = [
        _start("producer", db_url, f"{p * 1000} {PER_PRODUCER} {tmp_path}") for p in range(PRODUCERS)
    ]
    for process in [checker, *producers]:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    queue.enqueue("jobs:record", {"n": -1}, queue=Q)  # run once the workers are up
    workers = [
        start_batchq(db_url, "run", "--queue", Q, "--wait", "120", "--poll-interval", "0.05")
        for _ in range(2)
    ]
    try:
        wait_for(lambda: -1 in ledger(queue), timeout=60)
        for process in [checker, *producers]:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.close()
        # The producers' jobs hold at a gate until the queue has overflowed (a job dropped, or an
        # enqueue refused), so that neither a fast drain on a quiet machine nor slow producers on a
        # busy one keep the queue below its bound; then the workers drain while producers go on.
        wait_for(lambda: _overflowed(queue, tmp_path, overflow), timeout=120)
        (tmp_path / "gate").touch()
        produced = [_result(process) for process in producers]
        # Every job is enqueued: once none is left to run (the dropped ones stay, failed), SIGTERM
        # the workers rather than wait for them to idle out a --wait.
        wait_for(lambda: not sql(queue, "SELECT id FROM batchq_job WHERE status <> 'failed'"), timeout=120)
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            out, err = worker.communicate(timeout=180)
            assert worker.returncode == 0, err
    finally:  # no worker outlives its test
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
    stop.touch()
    sampled = _result(checker)

    enqueued = {p * 1000 + i for p in range(PRODUCERS) for i in range(PER_PRODUCER)}
    ran = [n for n in ledger(queue) if n != -1]
    failed = sql(queue, "SELECT payload, last_error FROM batchq_job WHERE status = 'failed'")
    dropped = [json.loads(bytes(payload))["n"] for payload, _ in failed]
    assert all("dropped to make room" in error for _, error in failed)
    assert sampled["samples"] >= 20, sampled
    assert sampled["max"] <= BOUND, f"the checker saw {sampled['max']} waiting jobs in a queue of {BOUND}"
    assert len(ran) == len(set(ran)), "a job ran twice"
    assert set(ran) | set(dropped) == enqueued and not set(ran) & set(dropped)
    rejected = sum(result["rejected"] for result in produced)
    if overflow == "reject":
        assert dropped == [] and rejected > 0
    else:
        assert dropped, "the queue never overflowed: the test proves nothing"
    print(
        f"{overflow}: {len(enqueued)} enqueued, {len(ran)} ran, {len(dropped)} dropped, {rejected} rejected "
        f"enqueues retried; checker max {sampled['max']} of {BOUND} over {sampled['samples']} samples"
    )


def _overflowed(queue: Queue, folder: Path, overflow: str) -> bool:
    if overflow == "reject":
        return (folder / "rejected").exists()
    return bool(sql(queue, "SELECT id FROM batchq_job WHERE status = 'failed'"))


def _start(role: str, url: str, arg: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(APPS_DIR / "bounded_jobs.py"), role, url, Q, arg],
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


SCHEDULES, TICKERS, TICK_SECONDS, TICK_BOUND = 3, 4, 5.0, 3


@pytest.mark.slow
@pytest.mark.parametrize("overflow", ["drop_oldest", "reject"])
def test_ticks_from_several_hosts_keep_the_bound(
    db_url: str, queue: Queue, tmp_path: Path, overflow: str
) -> None:
    """Three every-second, catch-up-all schedules into one bounded queue, 20 s overdue, ticked by
    four processes at once while a worker drains: the checker never sees more waiting jobs than
    the bound, no slot is enqueued twice, and under drop_oldest every slot is accounted for (ran,
    or waiting, or dropped with the reason); under reject none is dropped."""
    queue.configure(Q, max_length=TICK_BOUND, overflow=overflow)
    now = int(queue.schedules.server_now())
    for k in range(SCHEDULES):
        queue.schedule(f"s{k}", "* * * * * *", "jobs:record_tagged_slot", queue=Q, catch_up="all")
        run_query(queue, "schedule_set_next_exec", {"name": f"s{k}", "at": now - 20})
    stop = tmp_path / "stop"
    checker = _start("checker", db_url, str(stop))
    assert checker.stdout is not None and checker.stdout.readline().strip() == "ready"
    assert checker.stdin is not None
    checker.stdin.write("go\n")
    checker.stdin.close()
    worker = start_batchq(db_url, "run", "--queue", Q, "--wait", "600", "--poll-interval", "0.05")
    try:
        tickers = [
            subprocess.Popen(
                [sys.executable, str(APPS_DIR / "ticker.py"), str(TICK_SECONDS)],
                env=batchq_env(db_url),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(TICKERS)
        ]
        outputs = [ticker.communicate(timeout=TICK_SECONDS + 60) for ticker in tickers]
        assert [ticker.returncode for ticker in tickers] == [0] * TICKERS, outputs
        # Nothing fails; under reject a tick logs the slots a full queue refused.
        lines = [line for _, err in outputs for line in err.splitlines()]
        assert all("due slots not enqueued: queue 'bounded' is full" in line for line in lines), lines
        assert overflow == "reject" or lines == []
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
        stop.touch()
    sampled = _result(checker)
    assert sampled["max"] <= TICK_BOUND, (
        f"the checker saw {sampled['max']} waiting jobs in a queue of {TICK_BOUND}"
    )

    rows = sql(queue, "SELECT payload, status, last_error FROM batchq_job")
    left = [(json.loads(bytes(payload)), status, error) for payload, status, error in rows]
    tagged = [
        int(datetime.fromisoformat(p["batchq_slot"]).timestamp()) % 100_000 * 10
        + int(p["batchq_schedule"][1:])
        for p, _, _ in left
    ]
    written = ledger(queue) + tagged
    assert len(written) == len(set(written)), "a slot was enqueued twice"
    dropped = [error for _, status, error in left if status == "failed"]
    assert all("dropped to make room" in error for error in dropped)
    if overflow == "reject":
        assert dropped == []
    else:
        assert dropped, "the queue never overflowed: the test proves nothing"
        for k in range(SCHEDULES):  # every slot from the first due one to the last enqueued
            stored = queue.schedules.get(f"s{k}")
            assert stored is not None and stored.last_slot is not None
            expected = {s % 100_000 * 10 + k for s in range(now - 20, int(stored.last_slot.timestamp()) + 1)}
            assert expected <= set(written), f"schedule s{k} lost a slot"
    print(
        f"ticks into a {overflow} queue of {TICK_BOUND}: {len(written)} slots written, "
        f"{len(ledger(queue))} ran, {len(dropped)} dropped; checker max {sampled['max']} over "
        f"{sampled['samples']} samples"
    )


def test_tick_and_gc_error_report_a_full_reject_queue(db_url: str, queue: Queue) -> None:
    queue.configure(Q, max_length=1, overflow="reject")
    failed = queue.enqueue("jobs:noop", queue=Q)
    sql(queue, f"UPDATE batchq_job SET status = 'failed', error_count = 10 WHERE id = {failed}")
    queue.enqueue("jobs:noop", queue=Q)  # full now
    queue.schedule("pulse", "* * * * * *", "jobs:noop", queue=Q)
    run_query(queue, "schedule_set_next_exec", {"name": "pulse", "at": int(queue.schedules.server_now())})
    result = invoke_batchq(db_url, "tick")
    assert (result.returncode, result.stdout) == (1, "")
    assert "schedule pulse: 1 of 1 due slots not enqueued: queue 'bounded' is full" in result.stderr
    assert "Traceback" not in result.stderr
    result = invoke_batchq(db_url, "gc-error", "--requeue")
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert (
        "0 jobs requeued, 1 cause; 1 job not requeued: their queue is full (overflow reject)" in result.stdout
    )
    assert "not requeued, queue 'bounded' is full (max_length 1 waiting jobs" in result.stdout
    assert sorted(row[0] for row in sql(queue, "SELECT status FROM batchq_job")) == ["failed", "ready"]


def test_the_dashboards_requeue_respects_the_bound(db_url: str, queue: Queue) -> None:
    queue.configure(Q, max_length=1, overflow="reject")
    failed = queue.enqueue("jobs:noop", queue=Q)
    sql(queue, f"UPDATE batchq_job SET status = 'failed', error_count = 10 WHERE id = {failed}")
    queue.enqueue("jobs:noop", queue=Q)  # full now
    [group] = failure_groups(queue, [Q])
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        form = {"fingerprint": group.fingerprint, "queue": Q, "csrf": csrf}
        reply = board.post("/actions/requeue-group", form)
    note = urllib.parse.unquote_plus(reply.headers["Location"])
    assert f"requeued 0 jobs of failure group {group.fingerprint} in queue {Q}" in note
    assert "1 job left failed: the queue is full (overflow reject)" in note
    assert sorted(row[0] for row in sql(queue, "SELECT status FROM batchq_job")) == ["failed", "ready"]
