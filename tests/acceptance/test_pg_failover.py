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
from batchq.config import parse_url
from batchq.errors import BackendUnavailable
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


def _server_port(queue: Queue) -> int:
    """The port of the server the queue's connection settled on."""
    return int(queue.backend.conn.info.port)


def _alive_on_new_primary(queue: Queue, pids: set[int]) -> bool:
    """Every running worker's liveness lock is held on the promoted server."""
    names = [name for name, pid in sql(queue, "SELECT name, pid FROM batchq_worker") if pid in pids]
    return len(names) == len(pids) and all(queue.backend.liveness.is_alive(name) for name in names)


def test_primary_killed_and_standby_promoted_mid_drain(pair: PrimaryStandby) -> None:
    queue = Queue(pair.url, task_modules=["failover_jobs"])
    assert _server_port(queue) == pair.primary.port
    queue.enqueue_many("failover_jobs:record", [{"n": n} for n in range(JOBS)])
    pool = WorkerPool(pair.url, "--wait", "5s", "--backoff", "0.1s", BATCHQ_TASK_MODULES="failover_jobs")
    pool.start(WORKERS)
    wait_for(lambda: len(ledger(queue)) > JOBS // 3, timeout=120, interval=0.05)
    failed_over_at = time.monotonic()
    pair.fail_over()
    queue.close()
    # The multi-host URL finds the promoted standby: target_session_attrs=read-write skips the
    # dead primary, and the standby once it takes writes.
    assert wait_for(lambda: _reconnected(queue), timeout=30) == pair.standby.port
    done_at_failover = len(ledger(queue))
    running = {proc.pid for proc, _ in pool.running}
    wait_for(lambda: _alive_on_new_primary(queue, running), timeout=30)
    recovered = time.monotonic() - failed_over_at
    pool.wait(timeout=180)
    assert [code for code, _ in pool.logs()] == [0] * WORKERS, pool.logs()
    assert pool.reconnects() >= WORKERS  # each worker lost its server and found the new one
    assert not unfinished(queue)
    assert len(ledger(queue)) > done_at_failover  # they went on after the failover
    row = account(
        queue,
        JOBS,
        Figures(
            "postgresql",
            "primary killed, standby promoted (sync replication)",
            WORKERS,
            JOBS,
            db_restarts=1,
            bound=WORKERS,  # a job in flight per worker at the failover
            lock_retries=pool.lock_retries(),
            max_recovery_s=recovered,
        ),
    )
    assert row.lost == 0 and row.duplicates <= row.bound
    assert job_rows(queue) == []
    queue.close()


def _reconnected(queue: Queue) -> int | None:
    try:
        return _server_port(queue)
    except BackendUnavailable:
        queue.close()
        return None


def test_multi_host_url_settles_on_the_primary_and_refuses_a_standby_only_list(pair: PrimaryStandby) -> None:
    standby_only = f"postgresql://postgres@127.0.0.1:{pair.standby.port}/{pair.database}"
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
