"""Tasks for tests/acceptance/test_liveness.py (BATCHQ_TASK_MODULES=jobs,liveness_jobs)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from batchq.backends import create_backend
from tests.support.queries import query


def record_then_sleep(payload: dict[str, Any]) -> None:
    """Write the job's number into test_ledger on a fresh connection to $LEDGER_URL (else
    $BATCHQ_URL), then sleep payload['sleep'] seconds, or until the file payload['until']
    exists: a long job whose every run is counted, however short the server's or the proxy's
    idle timeout."""
    backend = create_backend(os.environ.get("LEDGER_URL") or os.environ["BATCHQ_URL"])
    try:
        with backend.errors():
            cur = backend.conn.cursor()
            cur.execute(query(backend.dialect, "ledger_insert"), {"n": payload["n"], "pid": os.getpid()})
            cur.close()
    finally:
        backend.close()
    deadline = time.monotonic() + payload["sleep"]
    until = Path(payload.get("until") or os.devnull + ".never")
    while time.monotonic() < deadline and not until.exists():
        time.sleep(min(0.05, max(deadline - time.monotonic(), 0)))
