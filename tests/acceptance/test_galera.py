"""batchq on a 3-node MariaDB Galera cluster the tests start (tests/support/galera.py).

Galera replicates rows, not locks: a row locked by a claim on one node does not stop a claim of
the same row on another, and the later commit fails certification (1213), which batchq retries
like a deadlock. These scenarios add their rows to the reliability figures table.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from batchq import Queue
from batchq.backends import Backend, create_backend
from batchq.runtime.sweeps import gc_processing
from tests.support.db import create_database, job_rows, ledger, prepare_database, sql
from tests.support.galera import PROVIDER, GaleraCluster, GaleraNode
from tests.support.harness import Figures, WorkerPool, account, unfinished
from tests.support.processes import assert_one_line_error, run_batchq, wait_for

pytestmark = pytest.mark.slow

DATABASE = "batchq_galera"
ENSURE_SERVERS = Path(__file__).resolve().parents[2] / "scripts" / "ensure-servers"
# The ledger with a primary key: Galera replicates a row change by its key, and a keyless table's
# DELETE is applied by a full scan per row on every other node.
LEDGER = (
    "CREATE TABLE IF NOT EXISTS test_ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
    "n BIGINT NOT NULL, pid INT NOT NULL) ENGINE=InnoDB"
)


@pytest.fixture(scope="session")
def galera() -> Iterator[GaleraCluster]:
    if not PROVIDER.exists():  # the suite's own command installs it; so does a bare pytest run
        subprocess.run([str(ENSURE_SERVERS)], check=True)
    cluster = GaleraCluster()
    try:
        cluster.start()
        url = cluster.urls(DATABASE)[0]
        create_database(url)
        _run(url, LEDGER)
        yield cluster
    finally:
        cluster.stop()
        cluster.remove()


@pytest.fixture
def galera_queue(galera: GaleraCluster) -> Iterator[Queue]:
    url = galera.urls(DATABASE)[0]
    prepare_database("mysql", url)
    queue = Queue(url, task_modules=["jobs"])
    yield queue
    queue.set_partitions(0)
    queue.close()


def _run(url: str, statement: str) -> None:
    queue = Queue(url)
    try:
        _execute(queue.backend, statement)
    finally:
        queue.close()


_STARTED: list[WorkerPool] = []  # this test's pools, stopped when it ends however it ends


@pytest.fixture(autouse=True)
def _no_worker_outlives_its_test() -> Iterator[None]:
    """A test that fails mid-drain leaves its workers running: stopped here, or the next test's
    set-up meets their writes (on Galera, as deadlocks)."""
    yield
    while _STARTED:
        _STARTED.pop().stop()


def _pools(galera: GaleraCluster, per_node: int, *args: str, lease: str = "") -> list[WorkerPool]:
    """``per_node`` workers on each node, each pool connected to its node (with ?lease=)."""
    query = f"?lease={lease}" if lease else ""
    pools = [WorkerPool(url + query, "--backoff", "0.1s", *args) for url in galera.urls(DATABASE)]
    _STARTED.extend(pools)
    for pool in pools:
        pool.start(per_node)
    return pools


def _enqueue(queue: Queue, jobs: int) -> None:
    for start in range(0, jobs, 2000):
        queue.enqueue_many("jobs:record", [{"n": n} for n in range(start, min(start + 2000, jobs))])


def _drain(galera: GaleraCluster, queue: Queue, scenario: str, *args: str) -> Figures:
    jobs = 10_000
    _enqueue(queue, jobs)
    pools = _pools(galera, 2, *args)
    for pool in pools:
        pool.wait()
    assert [code for pool in pools for code, _ in pool.logs()] == [0] * 6, [p.logs() for p in pools]
    row = account(queue, jobs, Figures("galera", scenario, 6, jobs, lock_retries=_retries(pools)))
    assert (row.lost, row.duplicates) == (0, 0)
    assert job_rows(queue) == []
    return row


def _retries(pools: list[WorkerPool]) -> int:
    return sum(pool.lock_retries() for pool in pools)


def test_6_workers_over_3_nodes_drain_10000(galera: GaleraCluster, galera_queue: Queue) -> None:
    row = _drain(galera, galera_queue, "drain, 2 workers per node")
    # Claims on different nodes do collide: certification failures happen and are retried.
    assert row.lock_retries > 0


def test_partition_claims_over_3_nodes_drain_10000(galera: GaleraCluster, galera_queue: Queue) -> None:
    galera_queue.set_partitions(6)
    _drain(galera, galera_queue, "drain, 2 workers per node, --claim partition", "--claim", "partition")


def test_node_sigkilled_mid_drain_and_rejoins(galera: GaleraCluster, galera_queue: Queue) -> None:
    """Node 3 dies with its two workers' jobs in flight and is started again at once; it rejoins
    by state transfer. Its workers reconnect, or give up and exit (cron starts new ones), and
    gc-processing runs on node 1 all along: on Galera workers hold leases (GET_LOCK is not
    replicated), so the sweep tells live workers on the other nodes from gone ones. The lease
    (the default, 30 s) outlasts the cluster's pause while it notices the dead node: about 6 s
    here, but up to galera's inactive timeout (15 s) on a loaded machine, during which the other
    nodes' workers cannot renew. Node 1 is often the state-transfer donor, lagging while it
    copies: the sweep's liveness reads there wait for it (wsrep_sync_wait)."""
    queue, jobs = galera_queue, 10_000
    _enqueue(queue, jobs)
    pools = _pools(galera, 2)
    victim = galera.nodes[2]
    wait_for(lambda: len(ledger(queue)) > jobs // 3, timeout=120)
    victim.kill()
    killed_at = time.monotonic()
    galera.restart(victim)  # ~15 s: the workers of the other nodes drain meanwhile
    rejoined = time.monotonic() - killed_at
    deadline = time.monotonic() + 180
    while unfinished(queue) and time.monotonic() < deadline:
        time.sleep(0.5)
        gc_processing(queue)
        for pool in pools:
            pool.reap()
            pool.start(2 - len(pool.running))
    for pool in pools:
        pool.stop()
    row = account(
        queue,
        jobs,
        Figures(
            "galera",
            "node SIGKILLed mid-drain, rejoined",
            6,
            jobs,
            db_restarts=1,
            # The killed node's two workers, one job each: run, its effect replicated, and not
            # yet deleted when the node died. (Workers on the surviving nodes lose nothing: a
            # lagging node's liveness read waits for it to catch up, and a node that briefly
            # loses the primary component under load makes its workers reconnect, not exit.)
            bound=2,
            lock_retries=_retries(pools),
            max_recovery_s=rejoined,
        ),
    )
    for pool in pools:
        for _code, log in pool.logs():
            assert "Traceback" not in log
    assert row.lost == 0 and row.duplicates <= row.bound, _duplicates_and_logs(queue, pools)
    assert job_rows(queue) == []
    assert victim.state() == "Synced"


def _duplicates_and_logs(queue: Queue, pools: list[WorkerPool]) -> str:
    """What a failed drain shows: the jobs run twice, by which worker pids, and the workers' logs."""
    twice = sql(queue, "SELECT n, GROUP_CONCAT(pid) FROM test_ledger GROUP BY n HAVING COUNT(*) > 1")
    logs = [
        f"pid {proc.pid}:\n{text[-2000:]}"
        for pool in pools
        for (proc, _), (_, text) in zip(pool.finished, pool.logs(), strict=True)
    ]
    return f"run twice (n, pids): {twice}\n" + "\n".join(logs)


def test_a_lagging_node_sees_a_lease_renewed_on_another(galera: GaleraCluster, galera_queue: Queue) -> None:
    """A node applies the other nodes' writes after they commit. gc-processing on a node that
    lags (held here by FLUSH TABLES WITH READ LOCK, as an rsync state-transfer donor is) must
    not take a lease renewed on another node for expired: its liveness read waits until the
    node has caught up."""
    worker_url, sweep_url = galera.urls(DATABASE)[1] + "?lease=3s", galera.urls(DATABASE)[0]
    worker = create_backend(worker_url)
    worker.hold_liveness("lagging-node-test")
    sweep = Queue(sweep_url)
    blocker = create_backend(sweep_url)
    unlock = threading.Timer(1.0, _execute, (blocker, "UNLOCK TABLES"))
    try:
        _execute(blocker, "FLUSH TABLES WITH READ LOCK")  # node 1 stops applying
        expires = time.monotonic() + 3
        while time.monotonic() < expires + 0.5:  # renewed on node 2 past the first expiry
            worker.liveness.renew_if_due()
            time.sleep(0.1)
        stale = sql(
            sweep,
            "SELECT COUNT(*) FROM batchq_lease WHERE owner = 'lagging-node-test' "
            "AND expire_at > UTC_TIMESTAMP(6)",
        )
        assert stale == [(0,)]  # what node 1 shows without waiting: the lease expired
        unlock.start()
        assert sweep.backend.liveness.is_alive("lagging-node-test") is True
    finally:
        # The read returns as the server applies the timer's UNLOCK, maybe before the timer's
        # thread has read its answer: the connection is used again once that thread is done.
        unlock.cancel()
        if unlock.is_alive():
            unlock.join()
        _execute(blocker, "UNLOCK TABLES")
        for backend in (worker, blocker):
            backend.close()
        sweep.close()


def _execute(backend: Backend, statement: str) -> None:
    with backend.errors(), backend.conn.cursor() as cur:
        cur.execute(statement)


def test_stats_on_a_node_and_a_node_cut_off(galera: GaleraCluster, galera_queue: Queue) -> None:
    """stats names the node a Galera one, with lease liveness chosen for it; a node cut off
    from the cluster (gmcast.isolate) answers 1047, which batchq reports in one line."""
    url = galera.urls(DATABASE)[1]
    stats = run_batchq(url, "stats")
    assert stats.returncode == 0, stats.stderr
    assert "(a Galera cluster node: claims checked after commit)" in stats.stdout
    assert "liveness: a lease of 30 s" in stats.stdout
    assert "liveness: a lease of 10 s" in run_batchq(url + "?lease=10s", "stats").stdout
    node = galera.nodes[1]
    node.isolate(True)
    try:
        wait_for(lambda: node.state() != "Synced", timeout=30)
        assert_one_line_error(run_batchq(url, "stats"), "is not ready (WSREP has not yet prepared node")
    finally:
        node.isolate(False)
        node.wait_synced()


def test_a_second_cluster_on_this_machine_takes_ports_of_its_own(galera: GaleraCluster) -> None:
    """Two test runs on one machine each start a cluster: with fixed ports (23306.., 24567..) the
    second refused to start. Each picks free ports, and is a cluster of its own."""
    other = GaleraCluster(size=1)
    try:
        taken = {port for node in galera.nodes for port in (node.port, node.gcomm)}
        assert not taken & {other.nodes[0].port, other.nodes[0].gcomm}
        other.start()
        assert _cluster_size(other.nodes[0]) == 1
        assert _cluster_size(galera.nodes[0]) == 3
    finally:
        other.stop()
        other.remove()


def _cluster_size(node: GaleraNode) -> int:
    conn = pymysql.connect(host="127.0.0.1", port=node.port, user="root")
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW STATUS LIKE 'wsrep_cluster_size'")
            return int(cur.fetchone()[1])
    finally:
        conn.close()
