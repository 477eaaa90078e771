"""A deploy with old and new workers running together (issue 12): two `batchq run` processes
whose versioned_jobs module is version 2 (old) and version 3 (new). A job enqueued by the new
code ends up run by the new worker, never failed and never counted; old jobs run anywhere."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows, run_query, sql
from tests.support.processes import start_batchq, wait_for

pytestmark = pytest.mark.slow

GREET = "versioned_jobs:greet"
NEW_JOBS = 6
OLD_JOBS = 4
# A job put back waits 5-7.5 s (batchq.runtime.worker.VERSION_WAIT_*, not configurable), then goes to one
# of the idle workers; when that is the old one, it waits 5-7.5 s again. With both workers polling
# alike, each worker had even chances (the test took 40-60 s); the new worker's poll interval
# here gives it the better odds, so most jobs reach it the first time they come due. Who gets a
# due job: on MySQL and SQLite, the idle worker whose poll promotes it first (it claims at once):
# the one polling more often. On PostgreSQL, a worker woken by the promotion's NOTIFY, which
# claims while the promoter is still finishing its tick: the one polling less often. The old
# worker still claims every new job before the new one starts and competes for them after.
OLD_POLL = 0.1


def new_worker_poll(backend_name: str) -> float:
    return 0.5 if backend_name == "postgresql" else 0.02


def worker(db_url: str, version: int, poll: float) -> subprocess.Popen[str]:
    return start_batchq(
        db_url,
        "run",
        "--wait",
        "120",
        "--poll-interval",
        str(poll),
        "--max-procs-per-host",
        "8",
        BATCHQ_TASK_MODULES="jobs,versioned_jobs",
        VERSIONED_JOBS_VERSION=str(version),
    )


def ledger_pids(queue: Queue) -> dict[int, int]:
    return {int(n): int(pid) for n, pid in sql(queue, "SELECT n, pid FROM test_ledger")}


def test_new_jobs_wait_for_the_new_worker_while_the_old_one_runs(
    queue: Queue, db_url: str, backend_name: str
) -> None:
    vqueue = Queue(db_url, task_modules=["jobs", "versioned_jobs"])
    new_ids = [
        vqueue.enqueue(GREET, {"n": n, "name": f"user{n}", "lang": "en", "ledger": True})
        for n in range(NEW_JOBS)
    ]
    for n in range(100, 100 + OLD_JOBS):  # enqueued before task versions: version 1
        payload = json.dumps({"n": n, "user": f"user{n}", "ledger": True}).encode()
        run_query(queue, "job_insert_due_now", {"task": GREET, "payload": payload, "max_errors": 3})

    old = worker(db_url, 2, poll=OLD_POLL)
    workers = [old]
    try:
        # The old worker alone: it runs the version-1 jobs (upgraded to its version 2) and puts every
        # version-3 job back, uncounted, with a note naming it.
        wait_for(lambda: sum(s.waiting_for_version for s in queue.stats()) == NEW_JOBS, timeout=60)
        wait_for(lambda: len(ledger_pids(queue)) == OLD_JOBS, timeout=60)
        assert set(ledger_pids(queue).values()) == {old.pid}
        seen = queue.explain(new_ids[0])
        assert f"waiting for a worker that knows version 3 of task {GREET}" in seen.summary
        assert f":{old.pid}:" in seen.summary and "knows version 2" in seen.summary
        explained = invoke_batchq(db_url, "explain", str(new_ids[-1]))
        assert f"waiting for a worker that knows version 3 of task {GREET}" in explained.stdout
        assert "jobs wait for a worker that knows a newer version" in invoke_batchq(db_url, "stats").stdout

        new = worker(db_url, 3, poll=new_worker_poll(backend_name))
        workers.append(new)
        wait_for(lambda: len(ledger_pids(queue)) == NEW_JOBS + OLD_JOBS, timeout=120)
        pids = ledger_pids(queue)
        assert {pids[n] for n in range(NEW_JOBS)} == {new.pid}  # every new job on the new worker
        wait_for(lambda: job_rows(queue) == [])  # none failed, none left (the last DELETE may trail its run)

        for proc in (old, new):
            proc.send_signal(signal.SIGTERM)
        old_out, old_err = old.communicate(timeout=30)
        new_out, new_err = new.communicate(timeout=30)
        assert (old.returncode, new.returncode) == (0, 0)
        # The outdated worker says so once (then at debug level), with what to do.
        assert old_err.count(f"of task {GREET}; this worker knows version 2") == 1, old_err
        assert "deploy it here too" in old_err
        assert new_err == "" and new_out == "" and old_out == ""
    finally:  # no worker outlives its test (they run with --wait 120)
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    vqueue.close()


def test_enqueue_from_the_shell_takes_a_backoff(queue: Queue, db_url: str) -> None:
    done = invoke_batchq(db_url, "enqueue", "jobs:fail", "--backoff", "90s")
    assert done.returncode == 0, done.stderr
    job_id = int(done.stdout)
    assert run_query(queue, "job_version_columns", {"id": job_id})[0][:2] == (1, 90.0)
    refused = invoke_batchq(db_url, "enqueue", "jobs:fail", "--backoff", "soon")
    assert refused.returncode == 2 and "invalid value for '--backoff': bad duration 'soon'" in refused.stderr
    assert "Traceback" not in refused.stderr and len(job_rows(queue)) == 1
