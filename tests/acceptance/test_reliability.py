"""The reliability suite: nothing enqueued is lost; a job runs twice only when a crash or a lost
database session explains it. Each scenario adds a row to the figures table printed at the end.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.runtime.sweeps import gc_processing
from tests.support.db import (
    SERVER_URLS,
    app_connection,
    autocommit_connection,
    create_database,
    job_rows,
    ledger,
    prepare_database,
    run_query,
    run_query_on,
    sql,
)
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
from tests.support.processes import APPS_DIR, batchq_env, run_batchq, start_batchq, wait_for, wait_for_worker
from tests.support.servers import PrivateMariaDB, PrivatePostgreSQL

pytestmark = pytest.mark.slow


def test_drain_8_workers_20000_jobs(queue: Queue, db_url: str, backend_name: str) -> None:
    jobs = 20_000
    for start in range(0, jobs, 2000):
        queue.enqueue_many("jobs:record", [{"n": n} for n in range(start, start + 2000)])
    pool = WorkerPool(db_url)
    pool.start(8)
    pool.wait()
    assert [code for code, _ in pool.logs()] == [0] * 8
    row = account(queue, jobs, Figures(backend_name, "drain", 8, jobs, lock_retries=pool.lock_retries()))
    assert (row.lost, row.duplicates) == (0, 0)
    assert job_rows(queue) == []


def test_drain_2_workers_of_4_lanes_8000_jobs(queue: Queue, db_url: str, backend_name: str) -> None:
    """`run --concurrency 4`: eight jobs at once in two processes, each lane its own claims."""
    jobs = 8000
    queue.enqueue_many("jobs:record", [{"n": n} for n in range(jobs)])
    pool = WorkerPool(db_url, "--concurrency", "4")
    pool.start(2)
    pool.wait()
    assert [code for code, _ in pool.logs()] == [0] * 2
    figures = Figures(backend_name, "drain, --concurrency 4", 2, jobs, lock_retries=pool.lock_retries())
    row = account(queue, jobs, figures)
    assert (row.lost, row.duplicates) == (0, 0)
    assert job_rows(queue) == []


def test_contention_4_enqueuers_4_workers(queue: Queue, db_url: str, backend_name: str) -> None:
    per_enqueuer, jobs = 2500, 10_000
    pool = WorkerPool(db_url, "--wait", "3s", "--poll-interval", "0.05")
    pool.start(4)
    enqueuers = [
        subprocess.Popen(
            [
                sys.executable,
                str(APPS_DIR / "enqueuer.py"),
                db_url,
                str(i * per_enqueuer),
                str(per_enqueuer),
            ],
            env=batchq_env(db_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    enqueue_retries = 0
    for proc in enqueuers:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0 and err == "", err  # no error ever reaches an enqueuer
        enqueue_retries += int(out)
    pool.wait()
    assert [code for code, _ in pool.logs()] == [0] * 4
    retries = pool.lock_retries() + enqueue_retries
    row = account(
        queue, jobs, Figures(backend_name, "contention (4 enqueuers)", 4, jobs, lock_retries=retries)
    )
    assert (row.lost, row.duplicates) == (0, 0)
    assert job_rows(queue) == []


# -- SIGKILL at each point of a job's life ---------------------------------------------------


def _crash_claimed(queue: Queue, db_url: str, tmp: Path) -> subprocess.Popen[str]:
    """Killed after the claim committed, before the call (while importing the task's module)."""
    marker = tmp / "importing"
    queue.enqueue("jobs:record", {"n": 0})
    _set_task(queue, "slow_import_jobs:record")
    worker = start_batchq(
        db_url, "run", SLOW_IMPORT_MARKER=str(marker), BATCHQ_TASK_MODULES="jobs,slow_import_jobs"
    )
    wait_for(marker.exists)
    return worker


def _crash_mid_call(queue: Queue, db_url: str, tmp: Path) -> subprocess.Popen[str]:
    """Killed during the call, after the job's effect (its ledger row) was written."""
    started = tmp / "started"
    queue.enqueue("jobs:record_then_hang_once", {"n": 0, "started": str(started)})
    worker = start_batchq(db_url, "run")
    wait_for(started.exists)
    return worker


def _crash_before_delete(queue: Queue, db_url: str, tmp: Path) -> subprocess.Popen[str]:
    """Killed after the call returned, while its DELETE waits on a row lock we hold."""
    job_id = queue.enqueue("jobs:record", {"n": 0, "sleep": 1.0})
    worker = start_batchq(db_url, "run")
    wait_for(lambda: ledger(queue) == [0])  # the job's effect is written; it sleeps 1s more
    blocker = _lock_row(queue, job_id)  # (on SQLite this locks the whole database)
    time.sleep(1.5)  # the call has returned: the worker is inside its DELETE, waiting for our lock
    worker.kill()
    worker.wait()
    if queue.backend.dialect != "sqlite":
        # A server finishes a statement it was sent even after the client died, unless the
        # session dies too (as when the worker's host goes down): end it, as such a crash would.
        _kill_session_running(queue.backend.dialect, CLAIM_STATEMENT[queue.backend.dialect])
    blocker.rollback()
    blocker.close()
    return worker


def _set_task(queue: Queue, task: str) -> None:
    run_query(queue, "jobs_set_task", {"task": task})


def _lock_row(queue: Queue, job_id: int) -> Any:
    """A second connection holding a write lock that the worker's DELETE must wait for."""
    dialect = queue.backend.dialect
    conn = app_connection(str(queue.url) if dialect == "sqlite" else _server_url(queue))
    if dialect == "sqlite":
        conn.isolation_level = None  # the transaction is job_row_lock's own BEGIN IMMEDIATE
    run_query_on(conn, dialect, "job_row_lock", {"id": job_id})
    return conn


def _server_url(queue: Queue) -> str:
    return SERVER_URLS[queue.backend.dialect]


CRASH_POINTS = {
    "claimed, before the call": (_crash_claimed, 1),
    "mid-call, after its effect": (_crash_mid_call, 2),
    "after the call, before DELETE commits": (_crash_before_delete, 2),
}


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_sigkill_at_each_point(
    queue: Queue, db_url: str, backend_name: str, tmp_path: Path, point: str
) -> None:
    crash, expected_runs = CRASH_POINTS[point]
    worker = crash(queue, db_url, tmp_path)
    if worker.poll() is None:
        worker.kill()
        worker.wait()
    killed_at = time.monotonic()
    assert job_rows(queue)[0]["status"] == "processing"
    report = sweep_after_crash(queue, worker_name(worker.pid))  # one sweep recovers it
    recovery = time.monotonic() - killed_at
    assert len(report.requeued) == 1
    assert (
        run_batchq(
            db_url,
            "run",
            SLOW_IMPORT_MARKER=str(tmp_path / "importing"),
            BATCHQ_TASK_MODULES="jobs,slow_import_jobs",
        ).returncode
        == 0
    )
    assert job_rows(queue) == []
    # The ledger shows exactly what the promise allows: a second run only if the crash came
    # after the job's effect.
    assert ledger(queue) == [0] * expected_runs
    FIGURES.append(
        Figures(
            backend_name,
            f"SIGKILL {point}",
            1,
            1,
            kills=1,
            duplicates=expected_runs - 1,
            bound=1,
            max_recovery_s=recovery,
        )
    )


# -- partitioned claims ---------------------------------------------------------------------

PARTITION_ARGS = ("--claim", "partition", "--jobs-per-lease", "25")


def without_skip_locked(url: str, backend_name: str) -> str:
    """MySQL claims as on a server without SKIP LOCKED (the case partitions exist for)."""
    if backend_name != "mysql":
        return url
    return url + ("&" if "?" in url else "?") + "skip_locked=off"


def test_partition_claims_4_workers_drain_4000_once(queue: Queue, db_url: str, backend_name: str) -> None:
    jobs = 4000
    queue.set_partitions(8)
    try:
        queue.enqueue_many("jobs:record", [{"n": n} for n in range(jobs)])
        pool = WorkerPool(without_skip_locked(db_url, backend_name), *PARTITION_ARGS)
        pool.start(4)
        pool.wait()
        assert [code for code, _ in pool.logs()] == [0] * 4, pool.logs()
        scenario = "drain, --claim partition" + (" (skip_locked=off)" if backend_name == "mysql" else "")
        row = account(queue, jobs, Figures(backend_name, scenario, 4, jobs, lock_retries=pool.lock_retries()))
        assert (row.lost, row.duplicates) == (0, 0)
        assert job_rows(queue) == []
        assert len({pid for _, pid in sql(queue, "SELECT n, pid FROM test_ledger")}) > 1  # side by side
    finally:
        queue.set_partitions(0)


def test_partition_claims_random_sigkills_lose_nothing(queue: Queue, db_url: str, backend_name: str) -> None:
    """Workers killed while they hold a partition: the survivors take it back at once (its holder
    is dead), gc-processing puts back the job it held, nothing is lost."""
    jobs, workers, max_kills = 3000, 4, 12
    queue.set_partitions(8)
    try:
        queue.enqueue_many("jobs:record", [{"n": n} for n in range(jobs)])
        pool = WorkerPool(without_skip_locked(db_url, backend_name), *PARTITION_ARGS)
        killed = kill_at_random(queue, pool, workers, max_kills, 20261125, (0.05, 0.25))
        scenario = "chaos, --claim partition" + (" (skip_locked=off)" if backend_name == "mysql" else "")
        account_chaos(queue, pool, backend_name, scenario, jobs, workers, killed)
        assert pool.kills >= 5
    finally:
        queue.set_partitions(0)


# -- chaos ----------------------------------------------------------------------------------


def kill_at_random(
    queue: Queue, pool: WorkerPool, workers: int, max_kills: int, seed: int, pause: tuple[float, float]
) -> tuple[int, float]:
    """Keep ``workers`` workers of ``pool`` draining the queue, SIGKILLing one at random every
    ``pause`` seconds (at most ``max_kills``), each kill followed by one gc-processing; then stop
    the pool. Returns the jobs the killed workers held, and the longest a held job stayed
    claimed after its worker's kill."""
    pool.start(workers)
    rng = random.Random(seed)
    held_at_kill, recovery = 0, 0.0
    deadline = time.monotonic() + 600
    while unfinished(queue) and time.monotonic() < deadline:
        time.sleep(rng.uniform(*pause))
        pool.reap()
        if pool.running and pool.kills < max_kills:
            pid = pool.kill_one()
            killed_at = time.monotonic()
            held = held_by(queue, pid)
            held_at_kill += held
            sweep_after_crash(queue, worker_name(pid))
            if held:
                assert held_by(queue, pid) == 0  # one sweep took back what the dead worker held
                recovery = max(recovery, time.monotonic() - killed_at)
        pool.reap()
        pool.start(workers - len(pool.running))
    pool.stop()
    return held_at_kill, recovery


def account_chaos(
    queue: Queue,
    pool: WorkerPool,
    backend_name: str,
    scenario: str,
    jobs: int,
    workers: int,
    killed: tuple[int, float],
) -> None:
    """The figures row of a chaos run (kill_at_random's jobs held at a kill, and longest recovery):
    nothing lost, each duplicate a job a killed worker held, nothing left behind."""
    held_at_kill, recovery = killed
    figures = Figures(
        backend_name,
        scenario,
        workers,
        jobs,
        kills=pool.kills,
        bound=held_at_kill,
        lock_retries=pool.lock_retries(),
        max_recovery_s=recovery,
    )
    row = account(queue, jobs, figures)
    assert row.lost == 0
    assert row.duplicates <= held_at_kill  # each duplicate is a kill that landed while a job was held
    assert job_rows(queue) == []


def test_chaos_random_sigkills_while_10000_jobs_drain(queue: Queue, db_url: str, backend_name: str) -> None:
    jobs, workers, max_kills = 10_000, 4, 30
    queue.enqueue_many("jobs:record", [{"n": n} for n in range(jobs)])
    pool = WorkerPool(db_url)
    killed = kill_at_random(queue, pool, workers, max_kills, 20261122, (0.02, 0.15))
    account_chaos(queue, pool, backend_name, "chaos (random SIGKILL)", jobs, workers, killed)
    assert pool.kills >= 10


def test_chaos_random_sigkills_of_workers_with_lanes(queue: Queue, db_url: str, backend_name: str) -> None:
    """A SIGKILL ends every lane of the process at once: gc-processing puts back all they held."""
    jobs, workers, max_kills = 4000, 2, 12
    queue.enqueue_many("jobs:record", [{"n": n} for n in range(jobs)])
    pool = WorkerPool(db_url, "--concurrency", "4")
    killed = kill_at_random(queue, pool, workers, max_kills, 20261128, (0.05, 0.25))
    account_chaos(queue, pool, backend_name, "chaos (random SIGKILL), --concurrency 4", jobs, workers, killed)
    assert pool.kills >= 5


def test_poison_job_that_kills_its_worker_ends_failed(queue: Queue, db_url: str, backend_name: str) -> None:
    poison = queue.enqueue("jobs:kill_own_worker", max_errors=3)
    queue.enqueue("jobs:record", {"n": 0})
    rounds = 0
    while job_rows(queue)[0]["status"] != "failed":
        rounds += 1
        assert rounds <= 3, "the poison job was retried past max_errors"
        assert run_batchq(db_url, "run").returncode == -signal.SIGKILL
        [held] = [job for job in job_rows(queue) if job["status"] == "processing"]
        assert [job.id for job in sweep_after_crash(queue, held["locked_by"]).requeued] == [poison]
    assert run_batchq(db_url, "run").returncode == 0  # the queue goes on behind it
    assert ledger(queue) == [0]
    [row] = job_rows(queue)
    assert (row["id"], row["status"], row["error_count"]) == (poison, "failed", 3)
    FIGURES.append(Figures(backend_name, "poison job (kills its worker)", 1, 2, kills=3, bound=0))


# -- database faults (servers only: SQLite has no connection to kill or server to restart) ----------


@pytest.fixture
def server_queue(server_url: str) -> Iterator[Queue]:
    q = Queue(server_url, task_modules=["jobs"])
    yield q
    q.close()


# The statements of a worker's cycle as the server shows them: the claim, which first deletes the
# job just finished (MySQL shows the statement of its multi-statement query that is running), and
# the promotion of due scheduled jobs.
CLAIM_STATEMENT = {"mysql": "DELETE FROM batchq_job WHERE claim_token", "postgresql": "WITH done AS"}


def _kill_session_waiting_for_table_lock(dialect: str) -> None:
    """Wait for a session of this test database to block on jobs_table_lock, in whichever of
    its statements on the job table (a claim, a promotion, an expiry check, ...), and kill it."""
    monitor = autocommit_connection(SERVER_URLS[dialect])

    def blocked_session() -> Any:
        cur = run_query_on(monitor, dialect, "sessions_waiting_for_table_lock")
        row = cur.fetchone()
        cur.close()
        return row[0] if row else None

    session = wait_for(blocked_session, timeout=30)
    run_query_on(monitor, dialect, "session_end", {"session": session}).close()
    monitor.close()


def _kill_session_running(dialect: str, *statement_prefixes: str) -> None:
    """Wait for a worker's session to block in a statement starting with one of the prefixes,
    and kill that session. Only this test database's sessions: other suites may share the server."""
    monitor = autocommit_connection(SERVER_URLS[dialect])

    def blocked_session() -> Any:
        for prefix in statement_prefixes:
            cur = run_query_on(monitor, dialect, "sessions_running", {"statement": prefix + "%"})
            row = cur.fetchone()
            cur.close()
            if row:
                return row[0]
        return None

    session = wait_for(blocked_session, timeout=30)
    run_query_on(monitor, dialect, "session_end", {"session": session}).close()
    monitor.close()


@pytest.mark.parametrize("lanes", ["1", "3"])
def test_connection_killed_during_claim(
    server_queue: Queue, server_url: str, server_name: str, admin: Any, lanes: str
) -> None:
    queue = server_queue
    # An idle worker polls every 50 ms: a claim, then (finding nothing) its other statements on
    # the job table (promotion, blocked jobs to admit, expiry). The jobs arrive under a table
    # lock, so the next of them waits for the lock, and its connection is killed there (with
    # --concurrency, one lane's: it reconnects and puts back only its own unseen claim).
    worker = start_batchq(
        server_url,
        "-v",
        "run",
        "--wait",
        "60",
        "--max-jobs",
        "20",
        "--poll-interval",
        "0.05",
        "--concurrency",
        lanes,
    )
    wait_for_worker(queue.backend, worker)  # started, connected; next it polls
    run_query_on(admin, server_name, "jobs_table_lock")
    for n in range(20):
        run_query_on(admin, server_name, "job_insert_due", {"payload": json.dumps({"n": n}).encode()})
    _kill_session_waiting_for_table_lock(server_name)
    run_query_on(admin, server_name, "jobs_table_unlock")
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "reconnecting" in err and "1 reconnect," in err
    assert ledger(queue) == list(range(20))
    assert job_rows(queue) == []
    scenario = "connection killed during claim" + ("" if lanes == "1" else f", --concurrency {lanes}")
    FIGURES.append(Figures(server_name, scenario, 1, 20, conn_kills=1))


def test_connection_killed_during_finalize(
    server_queue: Queue, server_url: str, server_name: str, admin: Any
) -> None:
    queue = server_queue
    job_id = queue.enqueue("jobs:record", {"n": 0, "sleep": 0.5})
    worker = start_batchq(server_url, "-v", "run")
    wait_for(lambda: job_rows(queue)[0]["status"] == "processing")
    run_query_on(admin, server_name, "job_row_lock", {"id": job_id})
    _kill_session_running(server_name, CLAIM_STATEMENT[server_name])
    admin.rollback()
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "1 reconnect," in err and "0 stale finishes" in err
    assert ledger(queue) == [0]  # finished once: the retried DELETE carried the claim token
    assert job_rows(queue) == []
    FIGURES.append(Figures(server_name, "connection killed during finalize", 1, 1, conn_kills=1))


def test_server_restarts_while_workers_run(server_name: str, tmp_path: Path) -> None:
    server = PrivateMariaDB(tmp_path / "mariadb") if server_name == "mysql" else PrivatePostgreSQL()
    server.start()
    try:
        _restart_scenario(server, server_name)
    finally:
        server.stop()
        if hasattr(server, "remove"):
            server.remove()


def _restart_scenario(server: Any, server_name: str) -> None:
    url = server.url.rsplit("/", 1)[0] + "/batchq_restart"
    create_database(url)
    prepare_database(server_name, url)
    jobs, workers = 3000, 4
    queue = Queue(url, task_modules=["jobs"])
    queue.enqueue_many("jobs:record", [{"n": n} for n in range(jobs)])
    pool = WorkerPool(url, "--backoff", "0.1s")
    pool.start(workers)
    restarts, deadline = 0, time.monotonic() + 300
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if restarts < 2 and len(ledger(queue)) > (restarts + 1) * jobs // 4:
            server.restart()
            restarts += 1
            queue.close()
        gc_processing(queue)
        if not unfinished(queue):
            break
        pool.reap()
        pool.start(
            workers - len(pool.running)
        )  # a worker that gave up on the server exits; cron starts another
    pool.stop()
    assert restarts == 2
    row = account(
        queue,
        jobs,
        Figures(
            server_name,
            "server restarted twice",
            workers,
            jobs,
            db_restarts=restarts,
            bound=restarts * workers,
            lock_retries=pool.lock_retries(),
        ),
    )
    for _code, log in pool.logs():
        assert "Traceback" not in log
    assert row.lost == 0 and row.duplicates <= row.bound
    assert job_rows(queue) == []
    queue.close()
