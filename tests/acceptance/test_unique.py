"""Unique jobs across processes (issue 12): eight processes enqueue one key at the same moment;
the database's unique index lets exactly one write a job, and every process gets its id."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from batchq import Queue
from tests.support.db import job_rows
from tests.support.processes import APPS_DIR, batchq_env, run_batchq, wait_for

PROCESSES = 8


def test_eight_processes_enqueueing_one_key_at_once_create_one_job(db_url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(PROCESSES)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(APPS_DIR / "unique_enqueuer.py"), db_url, "invoice:42", str(r), str(go)],
            env=batchq_env(db_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in ready
    ]
    wait_for(lambda: all(r.exists() for r in ready), timeout=60)
    go.touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        job_id, created = out.split()
        results.append((int(job_id), created == "True"))
    queue = Queue(db_url, task_modules=["jobs"])
    [row] = job_rows(queue)
    assert {job_id for job_id, _ in results} == {row["id"]}  # every process got the one job's id
    assert sum(created for _, created in results) == 1  # and one of them wrote it
    queue.close()


def test_cli_enqueue_with_a_unique_key_prints_the_holders_id(db_url: str) -> None:
    first = run_batchq(db_url, "enqueue", "jobs:noop", '{"n": 1}', "--unique-key", "report:daily")
    assert first.returncode == 0 and first.stderr == "", first.stderr
    again = run_batchq(db_url, "enqueue", "jobs:noop", '{"n": 2}', "--unique-key", "report:daily")
    assert again.returncode == 0 and again.stdout == first.stdout
    job_id = first.stdout.strip()
    assert again.stderr == f"batchq: job {job_id} holds unique key 'report:daily': nothing enqueued\n"
    bad = run_batchq(db_url, "enqueue", "jobs:noop", "--unique-key", "")
    assert bad.returncode == 1 and "bad unique_key ''" in bad.stderr and "Traceback" not in bad.stderr
    queue = Queue(db_url, task_modules=["jobs"])
    assert [row["id"] for row in job_rows(queue)] == [int(job_id)]
    queue.close()
