"""Lease liveness (`?liveness=lease`, issue 14): a worker shows it is alive by a row it renews, for
clusters and poolers where a session's lock cannot be trusted. Real servers, real processes,
SIGKILL for the crash."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from batchq import Queue
from batchq.backends.liveness import LeaseLiveness
from batchq.runtime.sweeps import gc_processing
from tests.acceptance.test_liveness import LONG_JOB, SweepLoop, _fresh_look, _start_worker
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows, ledger, sql
from tests.support.harness import FIGURES, Figures
from tests.support.processes import run_batchq, wait_for

LEASE = 3.0  # seconds: the shortest a URL allows, so the tests wait little for an expiry


def lease_url(url: str, seconds: float = LEASE) -> str:
    return url + ("&" if "?" in url else "?") + f"liveness=lease&lease={seconds:g}s"


def test_the_url_chooses_leases_and_stats_says_so(server_url: str) -> None:
    queue = Queue(lease_url(server_url))
    try:
        assert isinstance(queue.backend.liveness, LeaseLiveness)
        assert queue.backend.liveness.ttl == LEASE
    finally:
        queue.close()
    result = invoke_batchq(lease_url(server_url), "stats")
    assert result.returncode == 0, result.stderr
    assert "liveness: a lease of 3 s the worker renews" in result.stdout
    plain = invoke_batchq(server_url, "stats")
    assert "liveness: a lock held by the worker's session" in plain.stdout


def test_a_lease_is_alive_to_every_session_until_it_expires_or_is_dropped(server_url: str) -> None:
    worker, sweeper = Queue(lease_url(server_url)), Queue(server_url)  # the sweeper: session mode
    try:
        worker.backend.hold_liveness("host:1:lease0001")
        assert sweeper.backend.liveness.is_alive("host:1:lease0001") is True
        worker.backend.liveness.release()
        assert sweeper.backend.liveness.is_alive("host:1:lease0001") is False
        worker.backend.hold_liveness("host:1:lease0002")
        worker.close()  # no renewal from now on; the connection's end changes nothing
        assert sweeper.backend.liveness.is_alive("host:1:lease0002") is True
        time.sleep(LEASE + 0.2)
        assert sweeper.backend.liveness.is_alive("host:1:lease0002") is False
    finally:
        worker.close()
        sweeper.close()


def test_a_job_longer_than_its_lease_keeps_it_and_runs_once(server_name: str, server_url: str) -> None:
    """The heartbeat renews the lease during the job, even when --heartbeat says 0 (off)."""
    url = lease_url(server_url)
    queue = Queue(url, task_modules=["liveness_jobs"])
    queue.enqueue(LONG_JOB, {"n": 0, "sleep": 3 * LEASE}, max_errors=3)
    with SweepLoop(server_url) as sweeps:
        worker = _start_worker(url, "--heartbeat", "0", "--wait", "1s")
        out, err = worker.communicate(timeout=60)
    seen, rows = _fresh_look(server_url)
    figures = Figures(server_name, f"lease {LEASE:g}s, a {3 * LEASE:g}s job", 1, 1)
    figures.lost, figures.duplicates = len({0} - set(seen)), len(seen) - len(set(seen))
    FIGURES.append(figures)
    assert worker.returncode == 0, err
    assert sweeps.requeued == []
    assert seen == [0]
    assert rows == []
    queue.close()


def test_a_killed_workers_job_comes_back_once_its_lease_expires_not_before(
    server_name: str, server_url: str, tmp_path: Path
) -> None:
    url, release = lease_url(server_url), tmp_path / "release"
    queue = Queue(url, task_modules=["liveness_jobs"])
    job = queue.enqueue(LONG_JOB, {"n": 0, "sleep": 120, "until": str(release)}, max_errors=3)
    worker = _start_worker(url, "--wait", "1s")
    wait_for(lambda: ledger(queue) == [0], timeout=30)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    killed_at = time.monotonic()
    sweeper = Queue(server_url)  # a sweep in session mode reads leases too
    try:
        assert gc_processing(sweeper).requeued == []  # the lease still runs: not back yet
        wait_for(lambda: [stuck.id for stuck in gc_processing(sweeper).requeued] == [job], timeout=LEASE + 10)
    finally:
        sweeper.close()
    came_back = time.monotonic() - killed_at
    assert came_back >= LEASE - 1.0  # the lease ran out on the server's clock; not at once
    release.touch()
    rerun = _start_worker(url, "--wait", "1s", "--backoff", "0")
    out, err = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, err
    figures = Figures(server_name, f"SIGKILL mid-job, lease {LEASE:g}s", 1, 1, kills=1, bound=1)
    figures.duplicates, figures.max_recovery_s = len(ledger(queue)) - 1, came_back
    FIGURES.append(figures)
    assert ledger(queue) == [0, 0]  # once before the crash, once after: the crash explains it
    assert job_rows(queue) == []
    queue.close()


def test_a_worker_that_exits_drops_its_lease(server_url: str) -> None:
    url = lease_url(server_url)
    queue = Queue(url, task_modules=["jobs"])
    queue.enqueue("jobs:noop", {"n": 1})
    result = run_batchq(url, "run", "--wait", "0", BATCHQ_TASK_MODULES="jobs")
    assert result.returncode == 0, result.stderr
    assert sql(queue, "SELECT owner FROM batchq_lease") == []
    queue.close()


def test_an_idle_workers_lease_stays_renewed_whatever_its_poll_interval(server_url: str) -> None:
    url = lease_url(server_url)
    worker = _start_worker(url, "--wait", "8s", "--poll-interval", "30s")
    sweeper = Queue(server_url)
    try:
        wait_for(lambda: sql(sweeper, "SELECT name FROM batchq_worker"), timeout=30)
        [(name,)] = sql(sweeper, "SELECT name FROM batchq_worker")
        time.sleep(2 * LEASE)  # two leases long: it lives only if renewed while idle
        assert sweeper.backend.liveness.is_alive(name) is True
    finally:
        worker.terminate()
        worker.communicate(timeout=30)
        sweeper.close()
