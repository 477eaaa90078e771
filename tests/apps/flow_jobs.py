"""Tasks for tests/acceptance/test_flow_control.py (BATCHQ_TASK_MODULES=jobs,flow_jobs)."""

from __future__ import annotations

import os
from typing import Any

import batchq
from batchq.backends import create_backend
from tests.support.queries import query


def record_start(payload: Any = None) -> None:
    """Write this job's start to test_flow_ledger, from the database itself: its id, its row's
    processing_at (the start as the claim fixed it, on the server's clock), the server's now as
    the job runs, and this worker's pid, all as seconds."""
    job = batchq.current_job()
    assert job is not None
    backend = create_backend(os.environ["BATCHQ_URL"])
    try:
        with backend.errors():
            cur = backend.conn.cursor()
            cur.execute(query(backend.dialect, "flow_ledger_insert"), {"id": job.id, "pid": os.getpid()})
            cur.close()  # autocommit: the row is there for the test to read
    finally:
        backend.close()
