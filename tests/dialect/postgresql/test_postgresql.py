"""PostgreSQL only: advisory-lock liveness, LISTEN/NOTIFY wake-up, the claim's plan."""

from __future__ import annotations

import signal
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.backends import create_backend, postgresql
from batchq.backends.postgresql import liveness_key
from batchq.backends.schema import migrate
from batchq.errors import BackendError, BackendUnavailable
from batchq.runtime.sweeps import gc_error, gc_processing
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import (
    SERVER_URLS,
    create_database,
    drop_database,
    job_rows,
    run_query,
    selected_backends,
    sibling_database,
    sibling_database_url,
    sql,
)
from tests.support.processes import start_batchq, wait_for, wait_for_worker
from tests.support.queries import query

pytestmark = pytest.mark.skipif("postgresql" not in selected_backends(), reason="PostgreSQL not selected")
URL = SERVER_URLS["postgresql"]


@pytest.fixture
def pg_queue() -> Iterator[Queue]:
    """A queue on the PostgreSQL test database, tables migrated and empty."""
    create_database(URL)
    backend = create_backend(URL)
    try:
        migrate(backend)
        with backend.errors():
            backend.conn.execute(query("postgresql", "ledger_create"))
            backend.conn.execute("TRUNCATE batchq_job, batchq_queue, test_ledger")
    finally:
        backend.close()
    queue = Queue(URL, task_modules=["jobs"], secret=b"test-secret")
    yield queue
    queue.close()


def listener() -> Any:
    import psycopg

    conn = psycopg.connect(URL, autocommit=True)
    conn.execute("LISTEN batchq_jobs")
    return conn


def notified(conn: Any, timeout: float = 0.3) -> list[str]:
    return [note.payload for note in conn.notifies(timeout=timeout)]


# -- liveness ---------------------------------------------------------------------------


def test_liveness_lock_is_seen_from_another_session_and_never_taken(pg_queue: Queue) -> None:
    worker = Queue(URL)
    worker.backend.liveness.hold("host-a:123")
    for _ in range(3):  # looking does not take it
        assert pg_queue.backend.liveness.is_alive("host-a:123") is True
    assert pg_queue.backend.liveness.is_alive("host-a:124") is False
    with pytest.raises(BackendError, match="already held"):
        pg_queue.backend.liveness.hold("host-a:123")
    key = liveness_key("host-a:123")
    [(locks,)] = sql(
        pg_queue,
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND classid = ((%s::bigint >> 32) & 4294967295)::oid",
        (key,),
    )
    assert locks == 1
    worker.close()  # the session ends: the lock goes with it
    wait_for(lambda: pg_queue.backend.liveness.is_alive("host-a:123") is False, timeout=5)


@pytest.mark.slow
def test_sigkilled_worker_is_dead_to_gc_at_once(pg_queue: Queue, tmp_path: Path) -> None:
    started = tmp_path / "started"
    job_id = pg_queue.enqueue("jobs:slow", {"started": str(started), "seconds": 60})
    proc = start_batchq(URL, "run")
    wait_for(started.exists)
    [owner] = {row["locked_by"] for row in job_rows(pg_queue)}
    assert pg_queue.backend.liveness.is_alive(owner) is True
    assert gc_processing(pg_queue, older_than=0).long_running[0].id == job_id  # reported, not stolen

    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    killed = time.monotonic()
    # The server notices the closed socket at once; nothing waits out a lease.
    report = wait_for(lambda: gc_processing(pg_queue).requeued, timeout=5)
    print(f"\nrequeued {time.monotonic() - killed:.3f}s after SIGKILL")
    assert [job.id for job in report] == [job_id]
    assert job_rows(pg_queue)[0]["status"] == "ready"


# -- NOTIFY ---------------------------------------------------------------------------------


def test_notify_when_a_job_becomes_due_now_and_only_then(pg_queue: Queue) -> None:
    conn = listener()
    try:
        pg_queue.enqueue("jobs:noop", queue="mail")
        assert notified(conn) == ["mail"]
        pg_queue.enqueue("jobs:noop", delay="1h")
        pg_queue.enqueue_many("jobs:noop", range(50), queue="bulk")
        assert notified(conn) == ["bulk"]  # one per queue and transaction; none for the delayed job
        [job] = pg_queue.backend.stores.jobs.claim("mail", "w:1", "a" * 32).jobs
        assert notified(conn) == []  # a claim is not news
        params = {"id": job.id, "token": "a" * 32, "error": "x", "fingerprint": "f" * 16, "delay": 10}
        params["error_class"] = None  # no exception class (migration 020)
        params |= {"wall": None, "cpu": None, "peak": None, "growth": None}  # not measured here
        assert pg_queue.backend.execute("job_error", params) == 1
        assert notified(conn) == []  # due in 10 s: pollers find it then
        sql(pg_queue, "UPDATE batchq_job SET status = 'failed' WHERE queue = 'mail'")
        assert notified(conn) == []
        assert len(gc_error(pg_queue, "requeue")) == 1
        assert notified(conn) == ["mail"]
        pg_queue.pause("reports")
        pg_queue.resume("reports")
        assert notified(conn) == ["reports"]
    finally:
        conn.close()


def test_transactional_enqueue_notifies_on_commit_only(pg_queue: Queue) -> None:
    import psycopg
    from psycopg.rows import dict_row

    conn = listener()
    app = psycopg.connect(URL, row_factory=dict_row)  # whatever row factory the app likes
    try:
        pg_queue.enqueue("jobs:noop", conn=app)
        assert notified(conn) == []
        app.commit()
        assert notified(conn) == ["default"]
        pg_queue.enqueue("jobs:noop", conn=app)
        app.rollback()
        assert notified(conn) == []
        assert len(job_rows(pg_queue)) == 1
    finally:
        app.close()
        conn.close()


@pytest.mark.slow
def test_waiting_worker_wakes_on_notify_not_on_its_poll(pg_queue: Queue, tmp_path: Path) -> None:
    # A 5 s poll interval: only the notification explains a pickup within milliseconds.
    proc = start_batchq(URL, "run", "--wait", "20", "--poll-interval", "5")
    try:
        warm = tmp_path / "warm"
        pg_queue.enqueue("jobs:stamp", str(warm))
        wait_for(warm.exists, timeout=10)
        latencies = []
        for i in range(7):
            time.sleep(0.3)  # the worker is idle again, waiting
            path = tmp_path / f"stamp-{i}"
            pg_queue.enqueue("jobs:stamp", str(path))
            committed = time.time()
            wait_for(path.exists, timeout=3, interval=0.005)
            latencies.append(float(path.read_text()) - committed)
        print(
            f"\nwake-up latency, enqueue commit -> job start: median "
            f"{statistics.median(latencies) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms"
        )
        assert max(latencies) < 0.5
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    assert (proc.returncode, err) == (0, "")


@pytest.mark.slow
def test_waiting_worker_survives_a_terminated_session(pg_queue: Queue, tmp_path: Path) -> None:
    proc = start_batchq(URL, "run", "--wait", "30", "--poll-interval", "5")
    # The worker's name has a random part: find its liveness lock (the only one in this database).
    worker_locks = (
        "SELECT pid, objid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        "AND pid <> pg_backend_pid()"
    )
    try:
        [(pid, objid)] = wait_for(lambda: sql(pg_queue, worker_locks), timeout=10)
        time.sleep(0.5)  # idle and listening
        sql(pg_queue, "SELECT pg_terminate_backend(%s)", (pid,))
        # It notices at once, reconnects, takes its liveness lock and LISTENs again.
        wait_for(
            lambda: [row for row in sql(pg_queue, worker_locks) if row[1] == objid and row[0] != pid],
            timeout=5,
        )
        time.sleep(0.5)
        path = tmp_path / "after"
        pg_queue.enqueue("jobs:stamp", str(path))
        committed = time.time()
        wait_for(path.exists, timeout=3, interval=0.005)
        assert float(path.read_text()) - committed < 0.5
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "reconnecting" in err


@pytest.mark.slow
def test_sigterm_while_waiting_exits_0_promptly(pg_queue: Queue) -> None:
    proc = start_batchq(URL, "run", "--wait", "60", "--poll-interval", "30")
    wait_for_worker(pg_queue.backend, proc)
    time.sleep(0.5)  # into its idle wait
    assert proc.poll() is None
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    elapsed = time.monotonic() - sent
    print(f"\nexited {elapsed * 1000:.0f} ms after SIGTERM")
    assert (proc.returncode, out, err) == (0, "", "")
    assert elapsed < 1.0


def test_wait_returns_at_timeout_and_on_stop(pg_queue: Queue) -> None:
    import threading

    backend = pg_queue.backend
    backend.liveness.hold("w:1")  # as a worker does: connected before it ever waits
    stop = threading.Event()
    backend.wait_for_jobs(["default"], 5, stop)  # the first call only LISTENs
    began = time.monotonic()
    backend.wait_for_jobs(["default"], 0.3, stop)
    assert 0.25 < time.monotonic() - began < 1
    other = Queue(URL, task_modules=["jobs"])
    other.enqueue("jobs:noop", queue="elsewhere")  # not ours: keep waiting
    began = time.monotonic()
    backend.wait_for_jobs(["default"], 0.3, stop)
    assert time.monotonic() - began > 0.25
    threading.Timer(0.2, stop.set).start()
    began = time.monotonic()
    backend.wait_for_jobs(["default"], 10, stop)
    assert time.monotonic() - began < 0.6
    other.close()


# -- the claim --------------------------------------------------------------------------------


def test_claim_walks_the_claim_index(pg_queue: Queue) -> None:
    sql(
        pg_queue,
        """
        INSERT INTO batchq_job (queue, task, priority, status, run_at, created_at)
        SELECT CASE WHEN mod(n, 10) = 0 THEN 'other' ELSE 'default' END, 'jobs:noop', mod(n, 3),
               CASE WHEN n <= 5000 THEN 'ready' ELSE 'scheduled' END,
               CASE WHEN n <= 5000 THEN now() - interval '1 hour' ELSE now() + interval '1 hour' END
                 + n * interval '1 millisecond',
               now()
        FROM generate_series(1, 10000) AS n""",
    )
    sql(pg_queue, "ANALYZE batchq_job")
    claim = pg_queue.backend.sql("jobs_claim")
    params = {"queue": "default", "limit": 1, "worker": "w:1", "token": "t" * 32}
    [(custom,)] = sql(
        pg_queue, f"EXPLAIN (FORMAT JSON) {claim}", {**params, "done_token": None, "done_ids": []}
    )
    # psycopg prepares a statement after 5 runs; the server may then switch to a generic plan.
    numbered = claim
    for number, name in enumerate(("queue", "worker", "token", "limit", "done_token", "done_ids"), 1):
        numbered = numbered.replace(f"%({name})s", f"${number}")
    sql(pg_queue, f"PREPARE claim_plan (text, text, text, bigint, text, bigint[]) AS {numbered}")
    sql(pg_queue, "SET plan_cache_mode = force_generic_plan")
    [(generic,)] = sql(
        pg_queue, "EXPLAIN (FORMAT JSON) EXECUTE claim_plan ('default', 'w:1', 't', 1, NULL, '{}')"
    )
    sql(pg_queue, "RESET plan_cache_mode")
    sql(pg_queue, "DEALLOCATE claim_plan")
    for plan in (custom, generic):
        nodes = list(_walk(plan[0]["Plan"]))
        scans = [node for node in nodes if node.get("Relation Name") == "batchq_job"]
        assert not any(node["Node Type"] in ("Seq Scan", "Bitmap Heap Scan") for node in scans), plan
        # The locking pick walks the claim index in its order: no sort of the table's rows.
        [picked] = [node for node in nodes if node.get("Subplan Name") == "CTE picked"]
        inner = list(_walk(picked))
        assert any(node.get("Index Name") == "batchq_job_claim" for node in inner), plan
        assert not any(node["Node Type"] == "Sort" for node in inner), plan
    [job] = pg_queue.backend.stores.jobs.claim("default", "w:1", "t" * 32).jobs
    [(priority, overdue)] = sql(
        pg_queue, "SELECT priority, run_at < now() FROM batchq_job WHERE id = %s", (job.id,)
    )
    assert (priority, overdue) == (2, True)


# The claim index holds 'ready' rows only (migration 029); what else read a queue through it reads
# batchq_job_parked (scheduled, blocked, failed) or, for the few running jobs, batchq_job_due.
PAGE = {"queue": "default", "task": None, "limit": 50, "priority": 2}
WINDOW = {"queue": "default", "window": 1000}
QUEUE_READERS = [
    *[
        (name, {**params, "status": status}, {index})
        for status, index in [
            ("ready", "batchq_job_claim"),
            ("scheduled", "batchq_job_parked"),
            ("blocked", "batchq_job_parked"),
            ("failed", "batchq_job_parked"),
            ("processing", "batchq_job_due"),
        ]
        for name, params in [
            ("dashboard_jobs_lower_priority", PAGE),
            ("dashboard_search_queue_jobs_window", WINDOW),
        ]
    ],
    ("explain_jobs_ahead", {"id": 1}, {"batchq_job_claim"}),
    ("queue_waiting_count", {"queue": "small"}, {"batchq_job_claim", "batchq_job_parked"}),
    ("queue_exists", {"queue": "nosuch"}, {"batchq_job_claim", "batchq_job_parked", "batchq_job_due"}),
    ("queue_purge", {"queue": "small"}, {"batchq_job_claim", "batchq_job_parked"}),
    (
        "jobs_cancel_where",
        {"queue": "small", "task": None, "older_than": 0, "batch": 1000},
        {"batchq_job_claim", "batchq_job_parked"},
    ),
]


@pytest.fixture(scope="module")
def planned_queue() -> Iterator[Queue]:
    """20,000 jobs in every state, in a database of their own, vacuumed as autovacuum leaves a
    table (index-only scans pay). Its own database: a session left over from another test (a
    worker that claims, a snapshot that holds VACUUM back) cannot change the rows or the plans."""
    drop_database("postgresql", sibling_database("postgresql", "plans"))
    url = sibling_database_url("postgresql", "plans")
    backend = create_backend(url)
    try:
        migrate(backend)
    finally:
        backend.close()
    queue = Queue(url, task_modules=["jobs"])
    sql(
        queue,
        """
        INSERT INTO batchq_job (queue, task, priority, status, run_at, created_at, locked_by, processing_at)
        SELECT CASE WHEN mod(n, 23) < 16 THEN 'default' WHEN mod(n, 23) < 22 THEN 'other' ELSE 'small' END,
               'jobs:noop', mod(n / 7, 3), s.status,
               now() + CASE WHEN s.status = 'scheduled' THEN interval '1 hour' ELSE interval '-1 hour' END
                     + n * interval '1 millisecond',
               now() - interval '2 hours',
               CASE WHEN s.status = 'processing' THEN 'host:1' END,
               CASE WHEN s.status = 'processing' THEN now() END
        FROM generate_series(1, 20000) AS n,
        LATERAL (SELECT CASE WHEN mod(n, 100) < 40 THEN 'ready' WHEN mod(n, 100) < 70 THEN 'scheduled'
                             WHEN mod(n, 100) < 85 THEN 'failed' WHEN mod(n, 100) < 99 THEN 'blocked'
                             ELSE 'processing' END AS status) AS s""",
    )
    sql(queue, "VACUUM ANALYZE batchq_job")
    [(pages, visible)] = sql(
        queue, "SELECT relpages, relallvisible FROM pg_class WHERE relname = 'batchq_job'"
    )
    assert pages > 0 and visible == pages, "VACUUM left pages not all-visible: a snapshot held it"
    yield queue
    queue.close()
    drop_database("postgresql", sibling_database("postgresql", "plans"))


@pytest.mark.parametrize(
    ("name", "params", "indexes"),
    QUEUE_READERS,
    ids=[f"{name}-{params.get('status', '')}" for name, params, _ in QUEUE_READERS],
)
def test_a_queue_s_readers_walk_an_index_in_every_state(
    planned_queue: Queue, name: str, params: dict[str, Any], indexes: set[str]
) -> None:
    statement = planned_queue.backend.sql(name)
    defaults = {"text": None, "needle": None, "payload_bytes": 1, "limit": 50, "task": None}
    [(plan,)] = sql(planned_queue, f"EXPLAIN (FORMAT JSON) {statement}", {**defaults, **params})
    nodes = list(_walk(plan[0]["Plan"]))
    scans = [node for node in nodes if node.get("Relation Name") == "batchq_job"]
    assert scans and not any(node["Node Type"] == "Seq Scan" for node in scans), plan
    assert indexes <= {node.get("Index Name") for node in nodes}, plan


def _walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _walk(child)


# -- errors and odds ----------------------------------------------------------------------------


def test_error_with_a_nul_byte_is_recorded(pg_queue: Queue) -> None:
    from batchq.runtime.worker import RunOptions, Worker

    pg_queue.enqueue("jobs:fail_with_nul")
    Worker(pg_queue, RunOptions()).run()
    [row] = job_rows(pg_queue)
    assert row["error_count"] == 1 and "bad byte \\x00 in" in row["last_error"]


def test_unreachable_server_hides_the_password() -> None:
    queue = Queue("postgresql://app:s3cret-pw@127.0.0.1:1/db", task_modules=["jobs"])
    with pytest.raises(BackendUnavailable) as caught:
        queue.enqueue("jobs:noop")
    assert "s3cret" not in str(caught.value)
    assert "cannot reach postgresql://app:***@127.0.0.1:1/db" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_describe_names_the_server_and_the_claim(pg_queue: Queue) -> None:
    text = pg_queue.backend.describe()
    assert text.startswith("PostgreSQL 1") and "FOR UPDATE SKIP LOCKED" in text
    assert pg_queue.backend.payload_limit() == 64 * 1024 * 1024


# -- dead rows: the worker's VACUUM -----------------------------------------------------------


def run_noop_jobs(queue: Queue, n: int) -> None:
    """n jobs enqueued and run to completion (claimed, then deleted: two dead rows each), their
    statistics sent to the server at once."""
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(n)])
    assert Worker(queue, RunOptions(batch_size=10)).run().succeeded == n
    run_query(queue, "stats_flush")
    queue.backend.fetchone("queues_paused")  # the flush goes with the next statement


def vacuums(queue: Queue) -> tuple[int, int]:
    [(dead, count)] = run_query(queue, "job_table_vacuums")
    return int(dead), int(count)


def test_vacuum_if_due_vacuums_once_enough_rows_are_dead(pg_queue: Queue) -> None:
    run_noop_jobs(pg_queue, 50)
    dead, count = vacuums(pg_queue)
    assert dead >= 100
    assert pg_queue.backend.vacuum_if_due(dead_rows=dead + 1, interval=0) is False
    assert pg_queue.backend.vacuum_if_due(dead_rows=dead, interval=0) is True
    assert vacuums(pg_queue) == (0, count + 1)
    run_noop_jobs(pg_queue, 50)
    # Vacuumed a moment ago: not again within the interval, however many rows are dead.
    assert pg_queue.backend.vacuum_if_due(dead_rows=1, interval=60) is False
    assert vacuums(pg_queue)[1] == count + 1


def test_one_worker_vacuums_at_a_time(pg_queue: Queue) -> None:
    run_noop_jobs(pg_queue, 20)
    other = Queue(URL)
    try:
        [(locked,)] = run_query(other, "vacuum_lock_take")
        assert locked is True
        assert pg_queue.backend.vacuum_if_due(dead_rows=1, interval=0) is False
        other.backend.fetchone("jobs_vacuum_unlock")
        assert pg_queue.backend.vacuum_if_due(dead_rows=1, interval=0) is True
    finally:
        other.close()


def test_worker_vacuums_the_job_table_between_jobs(pg_queue: Queue, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgresql, "VACUUM_DEAD_ROWS", 1)
    monkeypatch.setattr(postgresql, "VACUUM_INTERVAL_SECONDS", 0.0)
    run_noop_jobs(pg_queue, 20)
    count = vacuums(pg_queue)[1]
    pg_queue.enqueue("jobs:noop", {})
    assert Worker(pg_queue).run().succeeded == 1  # its first tick vacuums: 40 rows are dead
    assert vacuums(pg_queue)[1] == count + 1
