"""SQLite's loose column types: values a typed column would refuse, in rows written with plain
SQL (issue 9, item 11). Each must fail its own job, or be reported, while the jobs behind it run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows, sql
from tests.support.processes import run_batchq
from tests.support.rows import dead_worker, good_job, no_traceback, processing, row, run_then_sweep, write_row


def set_raw(queue: Queue, job_id: int, column: str, expression: str) -> None:
    """Store an SQL expression's value in a column, whatever its type (SQLite only checks little)."""
    sql(queue, f"UPDATE batchq_job SET {column} = {expression} WHERE id = ?", (job_id,))


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
    values: dict[str, Any] = {} if column == "payload" else {"payload": b"1"}
    hostile = write_row(queue, **values)
    set_raw(queue, hostile, column, stored)
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
