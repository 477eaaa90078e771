"""SQLite's loose column types: values a typed column would refuse, in rows written with plain
SQL (issue 9, item 11). Each must fail its own job, or be reported, while the jobs behind it run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.backends import sqlite as sqlite_backend
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows, sql
from tests.support.processes import run_batchq
from tests.support.rows import dead_worker, good_job, no_traceback, processing, row, run_then_sweep, write_row


def set_raw(queue: Queue, job_id: int, column: str, expression: str) -> None:
    """Store an SQL expression's value in a column, whatever its type (SQLite only checks little)."""
    sql(queue, f"UPDATE batchq_job SET {column} = {expression} WHERE id = ?", (job_id,))


# -- item 11: SQLite's loose column types -------------------------------------------------------


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("run_args", [(), ("--batch", "100")], ids=["one", "batch"])
@pytest.mark.parametrize(
    "column, stored, reason",
    [
        ("payload", "CAST(X'FF7B' AS TEXT)", "not valid"),  # TEXT, not BLOB, and not UTF-8
        ("task", "CAST(X'6A6F62733AFF' AS TEXT)", "bad task name"),
        ("serializer", "CAST(X'FF' AS TEXT)", "unknown serializer"),
    ],
)
def test_sqlite_text_that_is_not_utf8_fails_its_job_only(
    queue: Queue,
    db_url: str,
    tmp_path: Path,
    column: str,
    stored: str,
    reason: str,
    run_args: tuple[str, ...],
) -> None:
    values: dict[str, Any] = {} if column == "payload" else {"payload": b"1"}
    hostile = write_row(queue, **values)
    set_raw(queue, hostile, column, stored)
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url, *run_args)
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    job = row(queue, hostile)
    assert job["status"] == "scheduled" and reason in job["last_error"]
    assert swept.returncode == 0, swept.stderr


@pytest.mark.backends("sqlite")
def test_sqlite_text_payload_that_is_json_runs(queue: Queue, db_url: str, tmp_path: Path) -> None:
    marker = tmp_path / "from-text"
    job_id = write_row(queue, task="jobs:touch")
    set_raw(queue, job_id, "payload", f"'\"{marker}\"'")  # TEXT, valid JSON
    ran = run_batchq(db_url, "run")
    assert ran.returncode == 0, ran.stderr
    assert marker.read_text() == "ran"


@pytest.mark.backends("sqlite")
def test_sqlite_owner_that_is_not_utf8_does_not_stop_the_sweep(queue: Queue, db_url: str) -> None:
    hostile = write_row(queue, **processing(queue, None))
    set_raw(queue, hostile, "locked_by", "CAST(X'FF3A31' AS TEXT)")
    behind = write_row(queue, **processing(queue, dead_worker()))
    swept = invoke_batchq(db_url, "gc-processing")
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout and f"#{behind}" in swept.stdout
    assert row(queue, behind)["status"] == "ready"


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("value", ["'many'", "1e300", "-3"])
def test_sqlite_error_count_of_any_type_fails_or_retries_the_job(
    queue: Queue, db_url: str, tmp_path: Path, value: str
) -> None:
    hostile = write_row(queue, task="jobs:fail")
    set_raw(queue, hostile, "error_count", value)
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    assert "boom" in row(queue, hostile)["last_error"]
    assert swept.returncode == 0, swept.stderr


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("priority", [str(2**62), "'high'", "1.5"])
def test_sqlite_priority_of_any_type_runs_and_the_queue_runs(
    queue: Queue, db_url: str, tmp_path: Path, priority: str
) -> None:
    """SQLite lets a row written by hand hold any priority; the claim's ORDER BY still sorts it
    (text above every number), so it runs like any other and the sweep has nothing to say."""
    hostile = write_row(queue)
    set_raw(queue, hostile, "priority", priority)
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


# -- the claim decodes text in the driver, and leniently only when it must --------------------

TOKEN = "t" * 32


def lenient_calls(queue: Queue, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every value the backend's lenient text factory decodes from now on."""
    decoded: list[bytes] = []
    lenient = sqlite_backend._lenient_text

    def counting(data: bytes) -> str:
        decoded.append(data)
        return lenient(data)

    monkeypatch.setattr(sqlite_backend, "_lenient_text", counting)
    queue.backend.conn.text_factory = counting
    return decoded


def ready_in_claim_order(queue: Queue) -> list[int]:
    order = "SELECT id FROM batchq_job WHERE status = 'ready' ORDER BY priority DESC, run_at, id"
    return [int(job_id) for (job_id,) in sql(queue, order)]


@pytest.mark.backends("sqlite")
def test_sqlite_batch_claim_decodes_in_the_driver_in_claim_order(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [write_row(queue, priority=priority) for priority in (0, 5, 0, 9, 5)]
    set_raw(queue, ids[2], "run_at", "'2000-01-01 00:00:00.000'")  # the first of priority 0
    expected = ready_in_claim_order(queue)
    decoded = lenient_calls(queue, monkeypatch)
    claim = queue.backend.stores.jobs.claim("default", "w:1", TOKEN, 10)
    assert [job.id for job in claim.jobs] == expected != sorted(expected)
    assert {job.task for job in claim.jobs} == {"jobs:noop"}
    assert decoded == []  # no Python call per text value
    assert queue.backend.conn.text_factory is sqlite_backend._lenient_text  # for every other read


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("column", ["task", "serializer", "rate_key"])
def test_sqlite_claim_of_text_not_utf8_claims_again_leniently(
    queue: Queue, monkeypatch: pytest.MonkeyPatch, column: str
) -> None:
    """The strict claim fails on the row written by hand; it rolls back whole (the DELETE of the
    finished jobs too) and claims again, decoding leniently: each job claimed and deleted once."""
    first = [write_row(queue, priority=9) for _ in range(2)]
    done = queue.backend.stores.jobs.claim("default", "w:1", "d" * 32, 2).jobs
    assert [job.id for job in done] == first
    ids = [write_row(queue, priority=priority) for priority in (1, 3, 2)]
    set_raw(queue, ids[1], column, "CAST(X'6A6FFF' AS TEXT)")
    expected = ready_in_claim_order(queue)
    decoded = lenient_calls(queue, monkeypatch)
    claim = queue.backend.stores.jobs.claim("default", "w:1", TOKEN, 10, done)
    assert claim.deleted == 2 and [job.id for job in claim.jobs] == expected
    [hostile] = [job for job in claim.jobs if job.id == ids[1]]
    assert getattr(hostile, column) == "jo\ufffd"
    assert decoded  # this claim decoded leniently
    rows = sql(queue, "SELECT id, status, claim_token FROM batchq_job ORDER BY id")
    assert [tuple(r) for r in rows] == [(job_id, "processing", TOKEN) for job_id in ids]


@pytest.mark.backends("sqlite")
def test_sqlite_claim_inside_a_transaction_decodes_leniently_at_once(queue: Queue) -> None:
    """The limited claim (batchq.stores.flow) claims inside its own transaction, which the claim
    cannot roll back alone: it decodes leniently from the start."""
    hostile = write_row(queue)
    set_raw(queue, hostile, "task", "CAST(X'6A6FFF' AS TEXT)")
    with queue.backend.transaction():
        [job] = queue.backend.stores.jobs.claim("default", "w:1", TOKEN, 10).jobs
    assert job.id == hostile and job.task == "jo\ufffd"


@pytest.mark.backends("sqlite")
def test_sqlite_batch_of_priorities_of_any_type_in_sqlite_order(queue: Queue) -> None:
    """Text, numbers and blobs in one batch: Python cannot compare them, SQLite's ORDER BY can
    (blobs, then text, then numbers, from the top); the batch comes back in that order."""
    ids = [write_row(queue) for _ in range(6)]
    for job_id, priority in zip(ids, ["'high'", "7", "1.5", "'low'", "X'01'", "-2"]):
        set_raw(queue, job_id, "priority", priority)
    expected = ready_in_claim_order(queue)
    claim = queue.backend.stores.jobs.claim("default", "w:1", TOKEN, 10)
    assert [job.id for job in claim.jobs] == expected
    assert [job.priority for job in claim.jobs] == [b"\x01", "low", "high", 7, 1.5, -2]
