"""PgBouncer in transaction mode, started by the tests in front of the test server: every
transaction may run on another server session, so batchq keeps no session state there
(?pgbouncer=transaction: lease liveness, polling instead of LISTEN, no prepared statements).
The drain and the SIGKILL scenarios of the reliability suite, through it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from batchq import Queue
from batchq.core.config import parse_url
from tests.acceptance.test_reliability import kill_at_random
from tests.support.db import (
    SERVER_URLS,
    autocommit_connection,
    job_rows,
    prepare_database,
    sibling_database,
    sibling_database_url,
    sql,
)
from tests.support.harness import Figures, WorkerPool, account
from tests.support.pgha import PrivatePgBouncer
from tests.support.processes import assert_one_line_error, run_batchq

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bouncer() -> Iterator[PrivatePgBouncer]:
    test_server = parse_url(SERVER_URLS["postgresql"])  # the test server (ensure-servers)
    server = PrivatePgBouncer(server_port=test_server.port or 5432, server_host=test_server.host)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def pooled_url(bouncer: PrivatePgBouncer) -> str:
    """The test database's URL through PgBouncer; its tables made straight on the server."""
    prepare_database("postgresql", sibling_database_url("postgresql", "pgbouncer"))
    return bouncer.url(sibling_database("postgresql", "pgbouncer"))


@pytest.fixture
def pooled_queue(pooled_url: str) -> Iterator[Queue]:
    queue = Queue(pooled_url, task_modules=["jobs"])
    yield queue
    queue.close()


def _session_state() -> list[tuple[str, int]]:
    """What server sessions of the test database hold beyond a transaction: advisory locks and
    LISTENs (kinds and counts); through PgBouncer in transaction mode, batchq leaves none."""
    database = sibling_database("postgresql", "pgbouncer")
    conn = autocommit_connection(SERVER_URLS["postgresql"])
    rows = conn.execute(
        "SELECT 'advisory lock', COUNT(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
        " WHERE l.locktype = 'advisory' AND d.datname = %(db)s"
        " UNION ALL SELECT 'listen', COUNT(*) FROM pg_stat_activity"
        " WHERE datname = %(db)s AND query ILIKE 'LISTEN%%'",
        {"db": database},
    ).fetchall()
    conn.close()
    return [(str(kind), int(count)) for kind, count in rows if count]


def test_drain_through_pgbouncer_4_workers(pooled_queue: Queue, pooled_url: str) -> None:
    jobs = 6000
    pooled_queue.enqueue_many("jobs:record", [{"n": n} for n in range(jobs)])
    pool = WorkerPool(pooled_url, "--wait", "1s")
    pool.start(4)
    pool.wait()
    assert [code for code, _ in pool.logs()] == [0] * 4, pool.logs()
    assert _session_state() == []
    row = account(
        pooled_queue,
        jobs,
        Figures(
            "postgresql", "drain through PgBouncer (transaction)", 4, jobs, lock_retries=pool.lock_retries()
        ),
    )
    assert (row.lost, row.duplicates) == (0, 0)
    assert job_rows(pooled_queue) == []
    # Four workers, more statements each than psycopg's prepare threshold (5), on sessions
    # PgBouncer hands round: a prepared statement would have been missing on another session.
    assert len({pid for _, pid in sql(pooled_queue, "SELECT n, pid FROM test_ledger")}) > 1


def test_random_sigkills_through_pgbouncer_lose_nothing(pooled_queue: Queue, pooled_url: str) -> None:
    """Workers killed mid-drain: their leases expire (no session lock could tell, through a
    pooler), gc-processing puts their jobs back, nothing is lost."""
    jobs, workers, max_kills = 3000, 4, 8
    # 30 ms per job: the drain lasts about 25 s whatever the machine's load, long enough for the
    # kills (each waits for its lease, 3 s, before the sweep).
    pooled_queue.enqueue_many("jobs:record", [{"n": n, "sleep": 0.03} for n in range(jobs)])
    pool = WorkerPool(pooled_url + "&lease=3s")  # the shortest lease: a killed worker's jobs come back in 3 s
    held_at_kill, recovery = kill_at_random(
        # Pauses longer than a worker's start-up (about 0.5 s), so kills land while jobs are held.
        pooled_queue,
        pool,
        workers,
        max_kills,
        20261125,
        (0.4, 0.9),
    )
    row = account(
        pooled_queue,
        jobs,
        Figures(
            "postgresql",
            "chaos through PgBouncer (random SIGKILL)",
            workers,
            jobs,
            kills=pool.kills,
            bound=held_at_kill,
            lock_retries=pool.lock_retries(),
            max_recovery_s=recovery,
        ),
    )
    assert row.lost == 0
    assert row.duplicates <= held_at_kill
    assert pool.kills >= 4
    assert job_rows(pooled_queue) == []


def test_a_pooler_the_url_does_not_name_is_refused(pooled_url: str) -> None:
    unnamed = pooled_url.replace("?pgbouncer=transaction", "")
    assert_one_line_error(
        run_batchq(unnamed, "stats"), "connection pooler", "?pgbouncer=transaction", status=2
    )


def test_init_db_through_pgbouncer_says_to_go_straight_to_the_server(pooled_url: str) -> None:
    assert_one_line_error(
        run_batchq(pooled_url, "init-db"), "PgBouncer in transaction mode", "straight to", status=2
    )
