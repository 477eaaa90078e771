"""Jobs finished in their own transaction (@task(transactional=True)), with real `batchq run`
processes killed by SIGKILL: the task's write and the job's end commit together or not at all,
so the ledger (written on the job's transaction) holds each job exactly once, whatever the kills.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from batchq import Queue
from tests.support.db import job_rows, ledger
from tests.support.harness import (
    FIGURES,
    Figures,
    WorkerPool,
    account,
    held_by,
    sweep_after_crash,
    unfinished,
    worker_name,
)
from tests.support.processes import run_batchq, start_batchq, wait_for

pytestmark = pytest.mark.slow

MODULES = {"BATCHQ_TASK_MODULES": "jobs,tx_jobs"}


@pytest.fixture
def queue(db_url: str) -> Iterator[Queue]:
    """The tests' queue, allowed to enqueue the tasks of tests/apps/tx_jobs.py too."""
    q = Queue(db_url, task_modules=["jobs", "tx_jobs"], secret=b"test-secret")
    yield q
    q.close()


def test_sigkill_between_the_write_and_the_commit_leaves_neither(
    queue: Queue, db_url: str, backend_name: str, tmp_path: Path
) -> None:
    marker = tmp_path / "written"
    queue.enqueue("tx_jobs:record_then_hang_once", {"n": 0, "marker": str(marker)})
    worker = start_batchq(db_url, "run", **MODULES)
    wait_for(marker.exists)  # written on the job's transaction, which is still open
    assert ledger(queue) == []  # not committed: no other session sees it
    worker.kill()
    worker.wait()
    killed_at = time.monotonic()
    [row] = job_rows(queue)
    assert row["status"] == "processing"
    assert ledger(queue) == []  # rolled back with the dead worker's transaction
    report = sweep_after_crash(queue, worker_name(worker.pid))
    recovery = time.monotonic() - killed_at
    assert len(report.requeued) == 1
    done = run_batchq(db_url, "run", **MODULES)
    assert done.returncode == 0, done.stderr
    assert ledger(queue) == [0]  # one row: the second try's, which finished the job
    assert job_rows(queue) == []
    FIGURES.append(
        Figures(
            backend_name,
            "SIGKILL transactional job between its write and the commit",
            1,
            1,
            kills=1,
            duplicates=0,
            bound=0,
            max_recovery_s=recovery,
        )
    )


def kill_holders(queue: Queue, pool: WorkerPool, workers: int, kills: int, seed: int) -> tuple[int, float]:
    """Keep ``workers`` workers of ``pool`` draining, and every 0.05-0.3 s SIGKILL one that holds
    a job (at most ``kills``), then run gc-processing; then stop the pool. Returns how many kills
    found the job still held after the kill, and the longest it stayed claimed after one.

    Only holders are killed: a worker takes seconds to start on a loaded machine, and a kill
    while it starts tests nothing. When none holds a job, it looks again 10 ms later: on SQLite
    the workers spend most of their time waiting for the one writer, and a random pause found
    a holder too seldom for all the kills to land before the drain ended (8 of 12 in a run)."""
    pool.start(workers)
    rng = random.Random(seed)
    held_at_kill, recovery = 0, 0.0
    deadline = time.monotonic() + 600
    pause = rng.uniform(0.05, 0.3)
    while unfinished(queue) and time.monotonic() < deadline:
        time.sleep(pause)
        pool.reap()
        holders = [item for item in pool.running if held_by(queue, item[0].pid)] if pool.kills < kills else []
        pause = 0.01 if pool.kills < kills and not holders else rng.uniform(0.05, 0.3)
        if holders:
            proc, log = item = rng.choice(holders)
            proc.kill()
            proc.wait()
            killed_at = time.monotonic()
            pool.running.remove(item)
            pool.finished.append(item)
            pool.kills += 1
            held = held_by(queue, proc.pid)
            held_at_kill += held > 0
            sweep_after_crash(queue, worker_name(proc.pid))
            if held:
                assert held_by(queue, proc.pid) == 0  # one sweep took it back
                recovery = max(recovery, time.monotonic() - killed_at)
        pool.start(workers - len(pool.running))
    pool.stop()
    return held_at_kill, recovery


def test_random_sigkills_while_transactional_jobs_drain_write_each_once(
    queue: Queue, db_url: str, backend_name: str
) -> None:
    """3 workers drain jobs that each hold their transaction open 10 ms after their write, so a
    kill of a worker holding a job most likely lands between a write and its commit; then
    gc-processing and on. Not a bound on duplicates: none at all."""
    jobs, workers, kills = 1500, 3, 12
    queue.enqueue_many("tx_jobs:record", [{"n": n, "sleep": 0.01} for n in range(jobs)])
    pool = WorkerPool(db_url, **MODULES)
    held_at_kill, recovery = kill_holders(queue, pool, workers, kills, 20261127)
    row = account(
        queue,
        jobs,
        Figures(
            backend_name,
            "chaos, transactional jobs (SIGKILL while a job is held)",
            workers,
            jobs,
            kills=pool.kills,
            bound=0,
            lock_retries=pool.lock_retries(),
            max_recovery_s=recovery,
        ),
    )
    assert (row.lost, row.duplicates) == (0, 0)
    assert pool.kills == kills
    assert held_at_kill >= kills // 2  # most kills landed while a job was held: each could have duplicated
    assert job_rows(queue) == []
