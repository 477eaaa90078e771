"""PostgreSQL failover: a primary and a synchronous streaming standby, started by the test; workers
drain jobs through the multi-host URL; the primary dies mid-drain and the standby is promoted.
The workers reconnect to the new primary, take their liveness again and go on: nothing lost, a
job run twice only where a worker was in the middle of it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest

from batchq import Queue
from batchq.core.config import parse_url
from batchq.errors import BackendUnavailable
from batchq.runtime.sweeps import gc_processing
from tests.support.db import create_database, job_rows, ledger, prepare_database, sql
from tests.support.harness import Figures, WorkerPool, account, unfinished
from tests.support.pgha import STANDBY_NAME, PrimaryStandby
from tests.support.processes import run_batchq, wait_for

pytestmark = pytest.mark.slow

JOBS, WORKERS = 3000, 4


@pytest.fixture
def pair() -> Iterator[PrimaryStandby]:
    servers = PrimaryStandby()
    try:
        servers.start()
        create_database(servers.url)  # on the first host: the primary
        wait_for(lambda: _sync_state(servers) == "sync", timeout=30)
        prepare_database("postgresql", servers.url)
        yield servers
    finally:
        servers.stop()


def _sync_state(servers: PrimaryStandby) -> str | None:
    """How the primary sees its standby: 'sync' once commits wait for it."""
    with psycopg.connect(
        host="127.0.0.1", port=servers.primary.port, user="postgres", autocommit=True
    ) as conn:
        row = conn.execute(
            "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s", (STANDBY_NAME,)
        ).fetchone()
    return None if row is None else str(row[0])


def _standby_caught_up(servers: PrimaryStandby) -> bool:
    """The standby has replayed everything the primary has written so far."""
    with psycopg.connect(
        host="127.0.0.1", port=servers.primary.port, user="postgres", autocommit=True
    ) as conn:
        [primary_lsn] = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    with psycopg.connect(
        host="127.0.0.1", port=servers.standby.port, user="postgres", autocommit=True
    ) as conn:
        [caught_up] = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (primary_lsn,)).fetchone()
    return bool(caught_up)


def _server_port(queue: Queue) -> int:
    """The port of the server the queue's connection settled on."""
    return int(queue.backend.conn.info.port)


def _alive_on_new_primary(queue: Queue, pids: set[int]) -> bool:
    """Every worker that ran at the failover is alive on the promoted server (its lock or lease)."""
    names = [name for name, pid in sql(queue, "SELECT name, pid FROM batchq_worker") if pid in pids]
    return len(names) == len(pids) and all(queue.backend.liveness.is_alive(name) for name in names)


@pytest.mark.parametrize("liveness", ["session", "lease"])
def test_primary_killed_and_standby_promoted_mid_drain(pair: PrimaryStandby, liveness: str) -> None:
    """gc-processing runs every 0.2 s throughout, as cron would. With session liveness the new
    primary holds none of the old one's advisory locks: until a worker has reconnected, a sweep
    sees it dead and may put its job back (a duplicate, within the bound). A lease is a row,
    committed on the standby too: the workers stay alive across the failover."""
    url = pair.url + ("&liveness=lease&lease=10s" if liveness == "lease" else "")  # outlasts a failover
    queue = Queue(url, task_modules=["failover_jobs"])
    assert _server_port(queue) == pair.primary.port
    queue.enqueue_many("failover_jobs:record", [{"n": n} for n in range(JOBS)])
    pool = WorkerPool(url, "--wait", "5s", "--backoff", "0.1s", BATCHQ_TASK_MODULES="failover_jobs")
    pool.start(WORKERS)
    wait_for(lambda: len(ledger(queue)) > JOBS // 3, timeout=120, interval=0.05)
    running = {proc.pid for proc, _ in pool.running}
    failed_over_at = time.monotonic()
    pair.fail_over()
    queue.close()
    # The multi-host URL finds the promoted standby: target_session_attrs=read-write skips the
    # dead primary, and the standby once it takes writes.
    assert wait_for(lambda: _reconnected(queue), timeout=30) == pair.standby.port
    done_at_failover = len(ledger(queue))
    recovered = _sweep_until_workers_exit(queue, pool, running) - failed_over_at
    assert [code for code, _ in pool.logs()] == [0] * WORKERS, pool.logs()
    # Each worker lost its server and found the new one: _sweep_until_workers_exit saw every
    # worker alive on the new primary. Not every loss is a counted reconnect: a worker's
    # heartbeat may meet the dead connection first (during a job), and the next claim connects.
    assert pool.reconnects() >= 1
    assert not unfinished(queue)
    assert len(ledger(queue)) > done_at_failover  # they went on after the failover
    row = account(
        queue,
        JOBS,
        Figures(
            "postgresql",
            f"primary killed, standby promoted (sync replication, liveness={liveness})",
            WORKERS,
            JOBS,
            db_restarts=1,
            bound=_duplicate_bound(liveness),
            lock_retries=pool.lock_retries(),
            max_recovery_s=recovered,
        ),
    )
    assert row.lost == 0 and row.duplicates <= row.bound
    # Every duplicate belongs to a job in flight at the failover: at most one per worker.
    assert len(_jobs_written_twice(queue)) <= WORKERS
    if liveness == "lease":
        # No sweep took a job from a live worker: a duplicate is the task's own ledger write,
        # retried by the same process after a commit it never saw (failover_jobs.record).
        assert _run_by_two_workers(queue) == []
    assert job_rows(queue) == []
    queue.close()


def _duplicate_bound(liveness: str) -> int:
    """The ledger rows a failover may add, for the one job each worker has in flight: its write
    committed unseen and retried (+1, failover_jobs.record); with session liveness, also the job
    put back by a sweep before its worker reconnected, and run by another worker (+1)."""
    return WORKERS * (2 if liveness == "session" else 1)


def _jobs_written_twice(queue: Queue) -> list[int]:
    rows = sql(queue, "SELECT n FROM test_ledger GROUP BY n HAVING COUNT(*) > 1")
    return [int(n) for (n,) in rows]


def _run_by_two_workers(queue: Queue) -> list[int]:
    """Jobs whose effect was written by more than one worker process."""
    rows = sql(queue, "SELECT n FROM test_ledger GROUP BY n HAVING COUNT(DISTINCT pid) > 1")
    return [int(n) for (n,) in rows]


def _sweep_until_workers_exit(queue: Queue, pool: WorkerPool, running: set[int]) -> float:
    """gc-processing every 0.2 s until the workers have drained the queue and exited; returns
    when every worker was first seen alive on the new primary (monotonic time)."""
    alive_at = None
    deadline = time.monotonic() + 180
    while pool.running and time.monotonic() < deadline:
        try:
            gc_processing(queue)
            if alive_at is None and _alive_on_new_primary(queue, running):
                alive_at = time.monotonic()
        except BackendUnavailable:
            queue.close()
        time.sleep(0.2)
        pool.reap()
    pool.wait(timeout=10)
    assert alive_at is not None, "the workers' liveness was never seen on the new primary"
    return alive_at


def _reconnected(queue: Queue) -> int | None:
    try:
        return _server_port(queue)
    except BackendUnavailable:
        queue.close()
        return None


def test_multi_host_url_settles_on_the_primary_and_refuses_a_standby_only_list(pair: PrimaryStandby) -> None:
    standby_only = f"postgresql://postgres@127.0.0.1:{pair.standby.port}/{pair.database}"
    # Commits wait for the standby's flush, not its replay: let it apply the schema first.
    wait_for(lambda: _standby_caught_up(pair), timeout=30)
    with pytest.raises(BackendUnavailable, match="read-only"):  # 25006: a reconnect, not a job error
        Queue(standby_only, task_modules=["failover_jobs"]).enqueue("failover_jobs:record", {"n": 0})
    reversed_hosts = parse_url(pair.url).hosts[::-1]
    hosts = ",".join(f"{host}:{port}" for host, port in reversed_hosts)
    queue = Queue(f"postgresql://postgres@{hosts}/{pair.database}?target_session_attrs=read-write")
    assert _server_port(queue) == pair.primary.port  # the standby, listed first, is passed over
    queue.close()
    stats = run_batchq(pair.url, "stats")
    assert stats.returncode == 0, stats.stderr
    assert f"(connected to 127.0.0.1:{pair.primary.port})" in stats.stdout  # batchq stats says which
