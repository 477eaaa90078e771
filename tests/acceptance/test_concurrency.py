"""Per-key concurrency under real worker processes (issue 10): 4 `batchq run` processes, 200 jobs
over 5 keys, each job recording how many of its key ran at its start."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from batchq import Queue
from tests.support.db import job_rows
from tests.support.processes import start_batchq

LIMITS = {0: 1, 1: 1, 2: 1, 3: 1, 4: 2}  # key -> concurrency_limit
JOBS_PER_KEY = 40
WORKERS = 4
TASK_MODULES = "jobs,concurrency_jobs"


def test_four_workers_never_run_more_jobs_of_a_key_than_its_limit(db_url: str, tmp_path: Path) -> None:
    queue = Queue(db_url, task_modules=TASK_MODULES)
    log = tmp_path / "overlap.log"
    for key, limit in LIMITS.items():
        payloads = [{"key": key, "i": i, "sleep": 0.03, "log": str(log)} for i in range(JOBS_PER_KEY)]
        queue.enqueue_many(
            "concurrency_jobs:overlap", payloads, concurrency_key=f"customer:{key}", concurrency_limit=limit
        )
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(40)])  # no key: never waits for a slot
    workers = [
        start_batchq(db_url, "run", "--wait", "3s", "--max-seconds", "120", BATCHQ_TASK_MODULES=TASK_MODULES)
        for _ in range(WORKERS)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err
    assert job_rows(queue) == []  # every job ran, keyed or not
    most: dict[int, int] = defaultdict(int)
    pids: set[str] = set()
    runs = 0
    for line in log.read_text().splitlines():
        key, running, pid = line.split()
        most[int(key)] = max(most[int(key)], int(running))
        pids.add(pid)
        runs += 1
    assert runs == len(LIMITS) * JOBS_PER_KEY  # each keyed job once
    assert all(most[key] <= limit for key, limit in LIMITS.items()), dict(most)
    assert len(pids) > 1  # keys ran side by side in several workers, not one after another
    queue.close()
