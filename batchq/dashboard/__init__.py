"""`batchq dashboard`: a small web UI over the queues, served by waitress (the `dashboard` extra).

Pages read (queues, a queue's jobs, one job, a search (batchq.dashboard.search), failure groups,
workers, schedules, locks, message queues, and the Prometheus metrics at /metrics); actions
(pause, resume, requeue or delete a failure group, retry, run now, delete or cancel one job)
need the BATCHQ_DASHBOARD_TOKEN and a CSRF token (batchq.dashboard.security).
"""

from __future__ import annotations

import ipaddress
import logging

from waitress.server import BaseWSGIServer, MultiSocketServer, create_server

from ..queue import Queue
from .app import DEFAULT_REFRESH_SECONDS, create_app
from .hosts import HostPolicy, allowed_host_option, listen_addresses
from .security import TOKEN_ENV, Guard

__all__ = [
    "DEFAULT_REFRESH_SECONDS",
    "TOKEN_ENV",
    "Guard",
    "HostPolicy",
    "allowed_host_option",
    "create_app",
    "is_loopback",
    "listen_addresses",
    "make_server",
    "urls",
]

Server = BaseWSGIServer | MultiSocketServer
THREADS = 4  # requests served at once; each thread has its own database connection


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_server(
    queue: Queue, guard: Guard, host: str, port: int, refresh: float, allowed_hosts: tuple[str, ...] = ()
) -> Server:
    """The dashboard, listening (port 0: any free port; see ``effective_port``) but not yet
    serving: waitress, a pure-Python server with a bounded thread pool. It answers the Host
    headers of ``host`` and ``allowed_hosts`` (batchq.dashboard.hosts). OSError if it cannot
    listen there (a host that does not resolve included)."""
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "task queue depth" chatter
    addresses = listen_addresses(host, port)  # resolved first: waitress says only ValueError
    app = create_app(queue, guard, refresh, HostPolicy.for_listener(host, addresses, allowed_hosts))
    try:
        return create_server(
            app, host=host, port=port, threads=THREADS, ident="batchq", clear_untrusted_proxy_headers=True
        )
    except ValueError as exc:  # waitress: "Invalid host/port specified."
        raise OSError(str(exc)) from None


def urls(server: Server) -> list[str]:
    """The addresses the server listens on (one per address family of a host name)."""
    if isinstance(server, MultiSocketServer):
        listen = list(server.effective_listen)
    else:
        assert server.socket is not None  # bound by create_server
        listen = [server.socket.getsockname()[:2]]
    return [f"http://{f'[{host}]' if ':' in host else host}:{port}/" for host, port in listen]
