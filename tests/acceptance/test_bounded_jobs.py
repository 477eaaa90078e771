"""A bounded job queue under 8 producer processes and 2 `batchq run` workers: the bound holds at
every sample a checker process takes, and every job enqueued either ran once or was dropped
(failed, with the reason, for gc-error)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from tests.support.db import ledger, sql
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
    producers = [_start("producer", db_url, f"{p * 1000} {PER_PRODUCER}") for p in range(PRODUCERS)]
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
