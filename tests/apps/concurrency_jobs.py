"""Tasks for tests/acceptance/test_concurrency.py (BATCHQ_TASK_MODULES=jobs,concurrency_jobs)."""

from __future__ import annotations

import os
import time
from typing import Any

from batchq.backends import create_backend
from tests.support.queries import query


def overlap(payload: dict[str, Any]) -> None:
    """Count the jobs of this key running at this moment, this one included, and append the count
    to payload['log'] as 'key count pid': the job is in test_ledger (n = key * 1000 + i) while it
    sleeps payload['sleep'] seconds, so two that overlap see each other."""
    key, n = payload["key"], payload["key"] * 1000 + payload["i"]
    backend = create_backend(os.environ["BATCHQ_URL"])
    try:
        with backend.errors():
            cur = backend.conn.cursor()
            cur.execute(query(backend.dialect, "ledger_insert"), {"n": n, "pid": os.getpid()})
            cur.execute(query(backend.dialect, "ledger_count"), {"low": key * 1000, "high": key * 1000 + 999})
            [(running,)] = cur.fetchall()
            with open(payload["log"], "a") as log:
                log.write(f"{key} {running} {os.getpid()}\n")
            time.sleep(payload["sleep"])
            cur.execute(query(backend.dialect, "ledger_delete"), {"n": n})
            cur.close()
    finally:
        backend.close()
