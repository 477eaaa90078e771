"""Tasks for the scenarios past one server (failover, PgBouncer): their effect, a ledger row,
written on a connection of their own that rides out a failover.

jobs.record gives up at the first lost connection (the job is retried after its backoff);
through a failover the ledger's server is down for a second or two, so this one retries the
write, as an application's own code would. A retried write whose first try committed unseen
shows as a duplicate in the ledger: the scenario's bound counts it with the jobs in flight.
"""

from __future__ import annotations

import os
import time
from typing import Any

from batchq.backends import create_backend
from batchq.errors import BackendUnavailable
from tests.support.queries import query

LEDGER_RETRY_SECONDS = 30.0
_ledger_backend = None


def record(payload: dict[str, Any]) -> None:
    """Write the job's number into test_ledger (autocommit), retrying while the server is away."""
    global _ledger_backend
    if _ledger_backend is None:
        _ledger_backend = create_backend(os.environ["BATCHQ_URL"])
    backend = _ledger_backend
    deadline = time.monotonic() + LEDGER_RETRY_SECONDS
    while True:
        try:
            with backend.errors():
                cur = backend.conn.cursor()
                cur.execute(query(backend.dialect, "ledger_insert"), {"n": payload["n"], "pid": os.getpid()})
                cur.close()
            return
        except BackendUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
