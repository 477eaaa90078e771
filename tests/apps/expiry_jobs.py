"""Tasks of the expiry tests (issue 30): a task that notes when it began, on the database's clock.
Importable as `expiry_jobs` (BATCHQ_TASK_MODULES=expiry_jobs)."""

from __future__ import annotations

import os
import time
from typing import Any

from batchq.backends import create_backend
from tests.support.queries import query

_backend = None


def stamp(payload: dict[str, Any]) -> None:
    """Write (its number, now on the database's clock) into test_stamp first thing, on a
    connection of its own (autocommit), then sleep payload['sleep'] seconds, if any."""
    global _backend
    if _backend is None:
        _backend = create_backend(os.environ["BATCHQ_URL"])
    with _backend.errors():
        cur = _backend.conn.cursor()
        cur.execute(query(_backend.dialect, "stamp_insert"), {"n": payload["n"]})
        cur.close()
    if payload.get("sleep"):
        time.sleep(payload["sleep"])
