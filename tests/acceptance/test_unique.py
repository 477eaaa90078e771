"""Unique jobs across processes (issue 12): eight processes enqueue one key at the same moment;
the database's unique index lets exactly one write a job, and every process gets its id."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import app_connection, job_rows
from tests.support.processes import APPS_DIR, batchq_env, wait_for

PROCESSES = 8


def start_enqueuer(db_url: str, key: str, ready: Path, go: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(APPS_DIR / "unique_enqueuer.py"), db_url, key, str(ready), str(go)],
        env=batchq_env(db_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_eight_processes_enqueueing_one_key_at_once_create_one_job(db_url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(PROCESSES)]
    procs = [start_enqueuer(db_url, "invoice:42", r, go) for r in ready]
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
    first = invoke_batchq(db_url, "enqueue", "jobs:noop", '{"n": 1}', "--unique-key", "report:daily")
    assert first.returncode == 0 and first.stderr == "", first.stderr
    again = invoke_batchq(db_url, "enqueue", "jobs:noop", '{"n": 2}', "--unique-key", "report:daily")
    assert again.returncode == 0 and again.stdout == first.stdout
    job_id = first.stdout.strip()
    assert again.stderr == f"batchq: job {job_id} holds unique key 'report:daily': nothing enqueued\n"
    bad = invoke_batchq(db_url, "enqueue", "jobs:noop", "--unique-key", "")
    assert bad.returncode == 2 and "bad unique_key ''" in bad.stderr and "Traceback" not in bad.stderr
    queue = Queue(db_url, task_modules=["jobs"])
    assert [row["id"] for row in job_rows(queue)] == [int(job_id)]
    queue.close()


@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_an_enqueue_waits_for_a_transaction_that_wrote_the_key(
    db_url: str, tmp_path: Path, outcome: str
) -> None:
    """A job of the key written in an application's open transaction: another process's enqueue
    waits for that transaction, then returns its job (commit) or writes its own (rollback)."""
    queue = Queue(db_url, task_modules=["jobs"])
    conn = app_connection(db_url)
    try:
        mine = queue.enqueue("jobs:noop", unique_key="k", conn=conn)
        go = tmp_path / "go"
        go.touch()
        proc = start_enqueuer(db_url, "k", tmp_path / "ready", go)
        wait_for((tmp_path / "ready").exists, timeout=60)
        time.sleep(0.5)
        assert proc.poll() is None  # waiting for the open transaction
        getattr(conn, outcome)()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    finally:
        conn.close()
    job_id, created = out.split()
    [row] = job_rows(queue)
    assert row["id"] == int(job_id)
    assert (int(job_id), created) == ((mine, "False") if outcome == "commit" else (row["id"], "True"))
    queue.close()
