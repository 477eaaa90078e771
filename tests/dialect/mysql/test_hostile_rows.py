"""A hostile row only MySQL/MariaDB can hold: a status outside the ENUM (issue 9, item 11)."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchq import Queue
from tests.support.db import sql
from tests.support.rows import good_job, no_traceback, run_then_sweep, write_row

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
