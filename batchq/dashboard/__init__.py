"""`batchq dashboard`: a small web UI over the queues, served by waitress (the `dashboard` extra).

Pages read (queues, a queue's jobs, one job, failure groups, workers, schedules, locks, and the
Prometheus metrics at /metrics); actions (pause, resume, requeue or delete a failure group,
cancel a job) need the BATCHQ_DASHBOARD_TOKEN and a CSRF token (batchq.dashboard.security).
"""

from __future__ import annotations

import ipaddress
import logging

from ..queue import Queue
from .app import DEFAULT_REFRESH_SECONDS, create_app
from .security import TOKEN_ENV, Guard

__all__ = ["DEFAULT_REFRESH_SECONDS", "TOKEN_ENV", "Guard", "create_app", "serve", "is_loopback"]

THREADS = 4  # requests served at once; each thread has its own database connection


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(queue: Queue, guard: Guard, host: str, port: int, refresh: float) -> None:
    """Serve until interrupted (waitress: a pure-Python server with a bounded thread pool)."""
    import waitress

    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "task queue depth" chatter
    waitress.serve(
        create_app(queue, guard, refresh),
        host=host,
        port=port,
        threads=THREADS,
        ident="batchq",
        _quiet=True,
        clear_untrusted_proxy_headers=True,
    )
