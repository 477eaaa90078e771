"""Hostile and odd rows, large payloads and concurrent init-db (issue 9, items 6, 10, 11, 15).

Rows here are written with plain SQL, as anyone with write access to the tables could write
them. Each must be handled (failed with a reason, or reported for a human) while the jobs
behind it proceed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import batchq_cmd, batchq_env, job_rows, run_batchq, sql

from batchq import Queue
from batchq.worker import BACKOFF_MAX_SECONDS, retry_delay

NOW = {
    "mysql": "UTC_TIMESTAMP(6)",
    "postgresql": "statement_timestamp()",
    "sqlite": "strftime('%Y-%m-%d %H:%M:%f', 'now')",
}
# The hostile row goes first in the queue: the claim orders by (priority, run_at, id).
AN_HOUR_AGO = {
    "mysql": "UTC_TIMESTAMP(6) - INTERVAL 1 HOUR",
    "postgresql": "statement_timestamp() - interval '1 hour'",
    "sqlite": "strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 hour')",
}
# The largest error_count each table accepts: SMALLINT UNSIGNED; INTEGER CHECK 0..65535; INTEGER.
ERROR_COUNT_MAX = {"mysql": 65535, "postgresql": 65535, "sqlite": 2**63 - 1}


class Raw(str):
    """An SQL expression put into the INSERT as it is, not bound as a value."""


def placeholder(queue: Queue) -> str:
    return "?" if queue.backend.dialect == "sqlite" else "%s"


def write_row(queue: Queue, **values: Any) -> int:
    """INSERT a job row by plain SQL; returns its id. Unset columns get ordinary values."""
    dialect = queue.backend.dialect
    columns: dict[str, Any] = {
        "queue": "default",
        "task": "jobs:noop",
        "serializer": "json",
        "priority": 0,
        "status": "ready",
        "error_count": 0,
        "max_errors": 10,
        "run_at": Raw(AN_HOUR_AGO[dialect]),
        "created_at": Raw(NOW[dialect]),
        **values,
    }
    bound = [value for value in columns.values() if not isinstance(value, Raw)]
    slots = [value if isinstance(value, Raw) else placeholder(queue) for value in columns.values()]
    sql(queue, f"INSERT INTO batchq_job ({', '.join(columns)}) VALUES ({', '.join(slots)})", bound)
    [(job_id,)] = sql(queue, "SELECT MAX(id) FROM batchq_job")
    return int(job_id)


def processing(queue: Queue, owner: str, **values: Any) -> dict[str, Any]:
    """The columns of a claimed row owned by ``owner``."""
    return {
        "status": "processing",
        "locked_by": owner,
        "claim_token": "t" * 32,
        "processing_at": Raw(AN_HOUR_AGO[queue.backend.dialect]),
        **values,
    }


def dead_worker() -> str:
    """A worker name of this host whose process has exited (and holds no liveness lock)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return f"{socket.gethostname()}:{proc.pid}"


def good_job(queue: Queue, tmp_path: Path) -> tuple[int, Path]:
    marker = tmp_path / "good-job-ran"
    return queue.enqueue("jobs:touch", str(marker)), marker


def row(queue: Queue, job_id: int) -> dict[str, Any]:
    [found] = [r for r in job_rows(queue) if r["id"] == job_id]
    return found


def run_then_sweep(db_url: str) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """`batchq run`, then `batchq gc-processing`, as cron would."""
    return run_batchq(db_url, "run"), run_batchq(db_url, "gc-processing")


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr


# -- item 10: the backoff never overflows -----------------------------------------------------


def test_backoff_never_overflows() -> None:
    for count in (1025, 1100, 65534, 65535, 65536, 10**9):
        assert retry_delay(count) == BACKOFF_MAX_SECONDS
    assert retry_delay(65535, base=1e-300) == BACKOFF_MAX_SECONDS  # a tiny base still reaches the cap
    assert retry_delay(60, base=1e-15) == pytest.approx(1e-15 * 2**59)
    assert retry_delay(65535, base=0) == 0
    assert [retry_delay(n) for n in range(1, 6)] == [10, 20, 40, 80, 160]


@pytest.mark.parametrize("error_count", [1024, 65533])
def test_max_errors_65535_failures_near_the_limit_back_off(
    queue: Queue, db_url: str, tmp_path: Path, error_count: int
) -> None:
    failing = write_row(queue, task="jobs:fail", max_errors=65535, error_count=error_count)
    good, marker = good_job(queue, tmp_path)
    ran = run_batchq(db_url, "run")
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    job = row(queue, failing)
    assert (job["status"], job["error_count"]) == ("scheduled", error_count + 1)
    [stats] = queue.stats()
    assert stats.delayed == 1  # pushed back by the capped backoff, an hour


# -- item 11: a row at the error_count column's maximum -----------------------------------------


def test_error_count_at_its_maximum_fails_the_job_in_the_worker(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    top = ERROR_COUNT_MAX[queue.backend.dialect]
    hostile = write_row(queue, task="jobs:fail", error_count=top, max_errors=65535)
    good, marker = good_job(queue, tmp_path)
    ran = run_batchq(db_url, "run")
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    job = row(queue, hostile)
    assert job["status"] == "failed" and int(job["error_count"]) == top
    assert "boom" in job["last_error"]


def test_error_count_at_its_maximum_does_not_stop_gc_processing(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    top = ERROR_COUNT_MAX[queue.backend.dialect]
    gone = dead_worker()
    hostile = write_row(queue, **processing(queue, gone, error_count=top, max_errors=65535))
    behind = write_row(queue, **processing(queue, gone, task="jobs:touch"), payload=None)
    swept = run_batchq(db_url, "gc-processing")
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout and f"#{behind}" in swept.stdout
    assert row(queue, hostile)["status"] == "failed"
    assert int(row(queue, hostile)["error_count"]) == top
    assert row(queue, behind)["status"] == "ready"


# -- item 11: processing rows with NULL processing_at or claim_token ------------------------------


def test_processing_at_null_is_put_back_and_the_report_prints(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    hostile = write_row(queue, **processing(queue, dead_worker(), processing_at=None))
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0 and marker.exists(), ran.stderr
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout and "unknown" in swept.stdout
    assert row(queue, hostile)["status"] == "ready"
    assert run_batchq(db_url, "run").returncode == 0
    assert job_rows(queue) == []


def test_processing_at_null_of_a_live_worker_is_reported(queue: Queue, db_url: str) -> None:
    live = Queue(db_url, task_modules=["jobs"])
    name = f"{socket.gethostname()}:{os.getpid()}"  # this process: alive on every backend
    live.backend.hold_liveness(name)
    try:
        hostile = write_row(queue, **processing(queue, name, processing_at=None))
        swept = run_batchq(db_url, "gc-processing")
        assert swept.returncode == 3, swept.stderr
        no_traceback(swept)
        assert f"#{hostile}" in swept.stdout and "still running" in swept.stdout
        assert "unknown" in swept.stdout
        assert row(queue, hostile)["status"] == "processing"
    finally:
        live.close()


def test_null_claim_token_of_a_dead_worker_is_put_back_and_said(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    hostile = write_row(queue, **processing(queue, dead_worker(), claim_token=None))
    swept = run_batchq(db_url, "gc-processing")
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout and "no claim token" in swept.stdout
    assert row(queue, hostile)["status"] == "ready"
    good, marker = good_job(queue, tmp_path)
    assert run_batchq(db_url, "run").returncode == 0
    assert marker.exists() and job_rows(queue) == []


def test_null_owner_is_put_back(queue: Queue, db_url: str) -> None:
    hostile = write_row(queue, **processing(queue, None))
    swept = run_batchq(db_url, "gc-processing")
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout
    assert row(queue, hostile)["status"] == "ready"


# -- item 11: odd values in a ready row ---------------------------------------------------------


ODD_READY_ROWS = [
    pytest.param({"serializer": "yaml", "payload": b"1"}, "unknown serializer", id="odd-serializer"),
    pytest.param({"serializer": "", "payload": b"1"}, "unknown serializer", id="empty-serializer"),
    pytest.param({"task": ""}, "bad task name", id="empty-task"),
    pytest.param({"task": "not a task; rm -rf /"}, "bad task name", id="task-not-a-name"),
    pytest.param({"task": "os:system", "payload": b'"touch /tmp/x"'}, "not allowed", id="task-os-system"),
    pytest.param({"payload": b"\xff\xfe{"}, "not valid", id="payload-not-utf8"),
    pytest.param({"payload": b"[" * 100_000}, "not valid JSON", id="payload-nested-deep"),
    pytest.param({"serializer": "pickle", "payload": b"\x80\x04K\x01."}, "signature", id="unsigned-pickle"),
]


@pytest.mark.parametrize("values, reason", ODD_READY_ROWS)
def test_odd_ready_row_fails_with_its_reason_and_the_next_job_runs(
    queue: Queue, db_url: str, tmp_path: Path, values: dict[str, Any], reason: str
) -> None:
    hostile = write_row(queue, **values)
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    job = row(queue, hostile)
    assert job["status"] == "scheduled" and job["error_count"] == 1
    assert reason in job["last_error"]
    assert swept.returncode == 0 and swept.stdout == "", swept.stdout + swept.stderr


def test_priorities_at_the_column_limits_run(queue: Queue, db_url: str) -> None:
    low = write_row(queue, priority=-32768)
    high = write_row(queue, priority=32767)
    ran = run_batchq(db_url, "-vv", "run")
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.index(f"job {high} ") < ran.stderr.index(f"job {low} ")
    assert job_rows(queue) == []


FAR_RUN_AT = {
    "mysql": ("'1000-01-01 00:00:00'", "'9999-12-31 23:59:59.999999'"),
    "postgresql": ("'-infinity'", "'infinity'"),
    "sqlite": ("''", "'9999-99-99'"),
}


@pytest.mark.parametrize("batch", ["1", "10"])
def test_run_at_far_past_runs_and_far_future_waits(
    queue: Queue, db_url: str, tmp_path: Path, batch: str
) -> None:
    past, future = FAR_RUN_AT[queue.backend.dialect]
    first = write_row(queue, run_at=Raw(past))
    later = write_row(queue, run_at=Raw(future))
    good, marker = good_job(queue, tmp_path)
    ran = run_batchq(db_url, "run", "--batch", batch)
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    assert [r["id"] for r in job_rows(queue)] == [later]
    assert first not in [r["id"] for r in job_rows(queue)]
    stats = run_batchq(db_url, "stats")
    assert stats.returncode == 0, stats.stderr


@pytest.mark.backends("postgresql")
def test_infinite_processing_at_does_not_stop_the_sweep_or_stats(queue: Queue, db_url: str) -> None:
    gone = dead_worker()
    first = write_row(queue, **processing(queue, gone, processing_at=Raw("'-infinity'")))
    second = write_row(queue, **processing(queue, gone, processing_at=Raw("'infinity'")))
    swept = run_batchq(db_url, "gc-processing")
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{first}" in swept.stdout and f"#{second}" in swept.stdout
    assert run_batchq(db_url, "stats").returncode == 0


# -- item 11: SQLite's loose column types -------------------------------------------------------


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize(
    "column, stored, reason",
    [
        ("payload", "CAST(X'FF7B' AS TEXT)", "not valid"),  # TEXT, not BLOB, and not UTF-8
        ("task", "CAST(X'6A6F62733AFF' AS TEXT)", "bad task name"),
        ("serializer", "CAST(X'FF' AS TEXT)", "unknown serializer"),
    ],
)
def test_sqlite_text_that_is_not_utf8_fails_its_job_only(
    queue: Queue, db_url: str, tmp_path: Path, column: str, stored: str, reason: str
) -> None:
    values: dict[str, Any] = {column: Raw(stored)}
    if column != "payload":
        values["payload"] = b"1"
    hostile = write_row(queue, **values)
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    job = row(queue, hostile)
    assert job["status"] == "scheduled" and reason in job["last_error"]
    assert swept.returncode == 0, swept.stderr


@pytest.mark.backends("sqlite")
def test_sqlite_text_payload_that_is_json_runs(queue: Queue, db_url: str, tmp_path: Path) -> None:
    marker = tmp_path / "from-text"
    write_row(queue, task="jobs:touch", payload=Raw(f"'\"{marker}\"'"))  # TEXT, valid JSON
    ran = run_batchq(db_url, "run")
    assert ran.returncode == 0, ran.stderr
    assert marker.read_text() == "ran"


@pytest.mark.backends("sqlite")
def test_sqlite_owner_that_is_not_utf8_does_not_stop_the_sweep(queue: Queue, db_url: str) -> None:
    hostile = write_row(queue, **processing(queue, Raw("CAST(X'FF3A31' AS TEXT)")))
    behind = write_row(queue, **processing(queue, dead_worker()))
    swept = run_batchq(db_url, "gc-processing")
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout and f"#{behind}" in swept.stdout
    assert row(queue, behind)["status"] == "ready"


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("value", ["'many'", "1e300", "-3"])
def test_sqlite_error_count_of_any_type_fails_or_retries_the_job(
    queue: Queue, db_url: str, tmp_path: Path, value: str
) -> None:
    hostile = write_row(queue, task="jobs:fail", error_count=Raw(value))
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    assert "boom" in row(queue, hostile)["last_error"]
    assert swept.returncode == 0, swept.stderr


def _batchq_popen(db_url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        batchq_cmd(*args), env=batchq_env(db_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


# -- item 6: payload sizes as they go on the wire, and the caller's connection -------------------


def app_connection(db_url: str) -> Any:
    """The application's own connection, in a transaction (autocommit off)."""
    from batchq.config import parse_url

    url = parse_url(db_url)
    if url.dialect == "sqlite":
        import sqlite3

        return sqlite3.connect(url.database)
    if url.dialect == "mysql":
        import pymysql

        return pymysql.connect(
            host=url.host, port=url.port or 3306, user=url.user or "root", database=url.database
        )
    import psycopg

    return psycopg.connect(host=url.host, port=url.port or 5432, user=url.user, dbname=url.database)


def app_write(app: Any, n: int) -> None:
    """An earlier write of the application's transaction."""
    cur = app.cursor()
    marker = "?" if type(app).__module__.startswith("sqlite3") else "%s"
    cur.execute(f"INSERT INTO test_ledger (n, pid) VALUES ({marker}, {marker})", (n, n))
    cur.close()


def json_string_of(size: int) -> str:
    """A payload whose JSON encoding is exactly ``size`` bytes."""
    return "x" * (size - 2)


def enqueue_size_fits(queue: Queue, size: int) -> bool:
    """Does batchq's size check let a payload of ``size`` JSON bytes through? Writes nothing."""
    from batchq import PayloadError

    template = queue._job_template("jobs:noop", "default", None, 0, 10, "json")
    try:
        row = queue._job_row(template, json_string_of(size))
        queue.backend.check_statement_sizes("enqueue", [row])
    except PayloadError:
        return False
    return True


@pytest.mark.backends("mysql")
def test_mysql_size_check_is_exactly_what_the_server_accepts(queue: Queue, db_url: str) -> None:
    from batchq import PayloadError

    [(packet,)] = sql(queue, "SELECT @@max_allowed_packet")
    low, high = int(packet) // 2 - 4096, int(packet) // 2  # hex doubles a payload on the wire
    assert enqueue_size_fits(queue, low) and not enqueue_size_fits(queue, high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if enqueue_size_fits(queue, middle) else (low, middle)
    largest = low

    # The largest payload the check allows is stored whole...
    job_id = queue.enqueue("jobs:noop", json_string_of(largest))
    [(stored,)] = sql(queue, f"SELECT LENGTH(payload) FROM batchq_job WHERE id = {job_id}")
    assert stored == largest
    # ... one byte more is refused before anything is sent, and the connection lives on.
    with pytest.raises(PayloadError, match="more than this database accepts"):
        queue.enqueue("jobs:noop", json_string_of(largest + 1))
    assert [row["id"] for row in job_rows(queue)] == [job_id]
    assert queue.enqueue("jobs:noop", "still usable") > job_id

    # And that statement is indeed one the server refuses (it then drops the connection).
    import pymysql

    template = queue._job_template("jobs:noop", "default", None, 0, 10, "json")
    row = queue._job_row(template, json_string_of(largest + 1))
    throwaway = app_connection(db_url)
    with pytest.raises(pymysql.err.OperationalError) as refused, throwaway.cursor() as cur:
        cur.execute(queue.backend.sql("enqueue"), row)
    assert refused.value.args[0] in (1153, 2006, 2013)
    throwaway.close()


@pytest.mark.backends("mysql")
@pytest.mark.parametrize("mebibytes", [8.5, 12, 15.9])
def test_mysql_payloads_between_8_and_16_mib_are_refused_before_sending(
    queue: Queue, db_url: str, mebibytes: float
) -> None:
    from batchq import PayloadError

    payload = json_string_of(int(mebibytes * 1024 * 1024))
    app = app_connection(db_url)
    app_write(app, 1)
    with pytest.raises(PayloadError, match="max_allowed_packet"):
        queue.enqueue("jobs:noop", payload, conn=app)
    with pytest.raises(PayloadError, match="max_allowed_packet"):
        queue.enqueue_many("jobs:noop", ["small", payload], conn=app)
    kept = queue.enqueue("jobs:noop", "small", conn=app)
    app.commit()  # the application's transaction is intact: its earlier write commits
    app.close()
    assert [r["id"] for r in job_rows(queue)] == [kept]
    assert sql(queue, "SELECT n FROM test_ledger") == [(1,)]
    with pytest.raises(PayloadError):
        queue.enqueue_many("jobs:noop", ["small", payload])
    assert [r["id"] for r in job_rows(queue)] == [kept]


@pytest.mark.backends("mysql")
def test_mysql_enqueue_many_sends_rows_near_the_limit_one_per_statement(queue: Queue) -> None:
    from batchq import PayloadError

    [(packet,)] = sql(queue, "SELECT @@max_allowed_packet")
    size = int(packet) // 2 - 1024
    assert queue.enqueue_many("jobs:noop", [json_string_of(size)] * 2 + ["small"]) == 3
    assert len(job_rows(queue)) == 3
    with pytest.raises(PayloadError):
        queue.enqueue_many("jobs:noop", ["small", json_string_of(int(packet) // 2 + 1024)])
    assert len(job_rows(queue)) == 3


@pytest.mark.backends("mysql")
def test_mysql_enqueue_on_the_callers_connection_needs_no_connection_of_its_own(
    queue: Queue, db_url: str
) -> None:
    """The URL's credentials may differ from the application's: batchq asks the app's session."""
    from batchq import MessageQueue
    from batchq.config import parse_url

    url = parse_url(db_url)
    unusable = f"mysql://nobody:wrong@{url.host}:{url.port or 3306}/{url.database}"
    app = app_connection(db_url)
    other = Queue(unusable, task_modules=["jobs"])
    first = other.enqueue("jobs:noop", {"n": 1}, conn=app)
    assert other.enqueue_many("jobs:noop", [1, 2], conn=app) == 2
    MessageQueue(db_url).create_queue("rows")
    MessageQueue(unusable).send("rows", {"n": 1}, conn=app)
    app.commit()
    app.close()
    other.close()
    assert [r["id"] for r in job_rows(queue)][0] == first and len(job_rows(queue)) == 3


def test_payload_over_the_limit_leaves_the_callers_transaction_intact(queue: Queue, db_url: str) -> None:
    from batchq import PayloadError

    limit = queue.backend.payload_limit()
    app = app_connection(db_url)
    app_write(app, 7)
    with pytest.raises(PayloadError, match="more than this database accepts"):
        queue.enqueue("jobs:noop", json_string_of(limit + 1), conn=app)
    with pytest.raises(PayloadError, match="more than this database accepts"):
        queue.enqueue_many("jobs:noop", ["small", json_string_of(limit + 1)], conn=app)
    app.commit()
    app.close()
    assert job_rows(queue) == []
    assert sql(queue, "SELECT n FROM test_ledger") == [(7,)]


@pytest.mark.backends("sqlite", "postgresql")
def test_payload_at_the_limit_is_stored(queue: Queue) -> None:
    limit = queue.backend.payload_limit()
    job_id = queue.enqueue("jobs:noop", json_string_of(limit))
    [(stored,)] = sql(queue, f"SELECT LENGTH(payload) FROM batchq_job WHERE id = {job_id}")
    assert stored == limit


# -- item 15: the message filter agrees on every backend ------------------------------------------


def test_mq_filter_never_matches_inside_an_array(db_url: str) -> None:
    from batchq import MessageQueue

    mq = MessageQueue(db_url)
    mq.create_queue("arrays")
    docs: list[Any] = [
        {"k": [1, 2]},
        {"k": 1},
        [{"k": 1}],
        {"to": [{"vip": True}]},
        {"to": {"vip": True}},
        {"k": {"a": 1}},
        {"k": [{"a": 1}]},
        {"k": [[1]]},
    ]
    sent = mq.send_batch("arrays", docs)

    def matching(where: dict[str, Any]) -> list[int]:
        got = mq.read("arrays", vt=30, qty=20, where=where)
        for message in got:
            mq.set_vt("arrays", message.msg_id, 0)
        return sorted(message.msg_id for message in got)

    assert matching({"k": 1}) == [sent[1]]
    assert matching({"to": {"vip": True}}) == [sent[4]]
    assert matching({"k": {"a": 1}}) == [sent[5]]
    assert matching({"k": {}}) == [sent[5]]
    assert matching({}) == [sent[i] for i in (0, 1, 3, 4, 5, 6, 7)]  # every object
    mq.close()


# -- item 15: concurrent init-db on an empty database ---------------------------------------------


def fresh_database_url(backend_name: str, tmp_path: Path, name: str) -> str:
    from conftest import SERVER_URLS, create_database

    if backend_name == "sqlite":
        return f"sqlite:///{tmp_path / name}.db"
    drop_database(backend_name, name)
    url = SERVER_URLS[backend_name].rsplit("/", 1)[0] + "/" + name
    create_database(url)
    return url


def drop_database(backend_name: str, name: str) -> None:
    from conftest import SERVER_URLS

    from batchq.config import parse_url

    url = parse_url(SERVER_URLS[backend_name])
    if backend_name == "mysql":
        import pymysql

        conn = pymysql.connect(host=url.host, port=url.port or 3306, user=url.user or "root", autocommit=True)
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        conn.close()
    elif backend_name == "postgresql":
        import psycopg

        with psycopg.connect(
            host=url.host, port=url.port or 5432, user=url.user, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_four_concurrent_init_db_on_an_empty_database(backend_name: str, tmp_path: Path) -> None:
    for attempt in range(6):
        name = f"batchq_test_rows_init_{attempt}"
        url = fresh_database_url(backend_name, tmp_path, name)
        try:
            procs = [_batchq_popen(url, "init-db") for _ in range(4)]
            results = [(proc.wait(timeout=120), proc.stderr.read()) for proc in procs if proc.stderr]
            assert [code for code, _ in results] == [0] * 4, results
            assert all(err == "" for _, err in results), results
            queue = Queue(url, task_modules=["jobs"])
            assert queue.init_db() == []  # every migration recorded once
            assert queue.enqueue("jobs:noop") > 0
            queue.close()
        finally:
            if backend_name != "sqlite":
                drop_database(backend_name, name)


# -- found on the way: a PostgreSQL batch claim took more than its limit --------------------------


@pytest.mark.backends("postgresql")
def test_batch_claim_never_takes_more_than_its_limit_after_analyze(queue: Queue) -> None:
    # Statistics of a one-row table made the planner re-run the locking subquery per row.
    queue.enqueue("jobs:noop")
    sql(queue, "ANALYZE batchq_job")
    sql(queue, "DELETE FROM batchq_job")
    queue.enqueue_many("jobs:noop", list(range(10)))
    jobs = queue.backend.claim("default", "w:1", "t" * 32, 3).jobs
    assert len(jobs) == 3
    assert [r["status"] for r in job_rows(queue)].count("processing") == 3


# -- item 11: rows no worker will ever claim are reported -----------------------------------------


@pytest.mark.backends("mysql")
def test_mysql_status_outside_the_enum_is_reported_and_the_queue_runs(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    sql(queue, "SET SESSION sql_mode = ''")  # a careless session: 'bogus' is stored as ''
    hostile = write_row(queue, status="bogus")
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0 and marker.exists(), ran.stderr
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout and "no worker will claim" in swept.stdout


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("priority", [str(2**62), "'high'", "1.5"])
def test_sqlite_priority_of_any_type_runs_and_the_queue_runs(
    queue: Queue, db_url: str, tmp_path: Path, priority: str
) -> None:
    """SQLite lets a row written by hand hold any priority; the claim's ORDER BY still sorts it
    (text above every number), so it runs like any other and the sweep has nothing to say."""
    write_row(queue, priority=Raw(priority))
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0 and marker.exists(), ran.stderr
    no_traceback(ran)
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert job_rows(queue) == []


@pytest.mark.backends("sqlite")
def test_sqlite_priority_below_smallint_still_runs(queue: Queue, db_url: str) -> None:
    write_row(queue, priority=-(2**62))
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0 and swept.returncode == 0, ran.stderr + swept.stdout
    assert job_rows(queue) == []
