"""`batchq dashboard`: serve the web dashboard (needs the extra: pip install 'batchq[dashboard]')."""

from __future__ import annotations

import math
import os

import click

from ..errors import ConfigError
from .common import common_options, fail, open_queue, usage_error

INSTALL_HINT = "pip install 'batchq[dashboard]'"


def _finite(refresh: float) -> float:
    """FloatRange lets nan through (it compares false both ways): refused like the others."""
    if not math.isfinite(refresh):
        raise click.BadParameter(f"{refresh} is not a number of seconds from 0 to 3600")
    return refresh


@click.command()
@common_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on."
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests for this host name (a reverse proxy's, say); repeatable. "
    "Any other Host is refused (421), against DNS rebinding.",
)
@click.option("--read-only", is_flag=True, help="Offer no action, even with BATCHQ_DASHBOARD_TOKEN set.")
@click.option(
    "--refresh",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0, 3600),
    callback=lambda ctx, param, value: _finite(value),
    metavar="SECONDS",
    help="How often a page refreshes itself (0: never).",
)
@click.pass_context
def dashboard(
    ctx: click.Context, host: str, port: int, allowed_hosts: tuple[str, ...], read_only: bool, refresh: float
) -> None:
    """Serve a web dashboard: queues (pause, resume), a queue's jobs, one job (payload, last error,
    explain; cancel), failure groups (requeue, delete), workers, schedules, locks, and the
    Prometheus metrics at /metrics. Actions need BATCHQ_DASHBOARD_TOKEN (sign in with it) and are
    off without it or with --read-only."""
    try:
        from ..dashboard import (
            TOKEN_ENV,
            Guard,
            allowed_host_option,
            is_loopback,
            listen_addresses,
            make_server,
            urls,
        )
    except ImportError as exc:
        usage_error(f"the dashboard needs {exc.name}: {INSTALL_HINT}")  # as a driver the URL needs
    try:
        allowed = tuple(allowed_host_option(name) for name in allowed_hosts)
    except ConfigError as exc:
        usage_error(str(exc))
    try:
        listen_addresses(host, port)  # before connecting, and before warning about the host
    except OSError as exc:
        hint = "--host takes an IP address of this host or a name that resolves to one"
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}: {hint}")
    token = os.environ.get(TOKEN_ENV) or None
    guard = Guard(token, read_only)
    queue = open_queue(ctx)
    queue.backend.describe()  # connect now: a bad URL or a missing schema fails here, in one line
    if not is_loopback(host):
        exposed = "its pages (job payloads, errors) are readable by anyone who can reach it"
        if token is None:
            exposed += f", and no {TOKEN_ENV} is set"
        click.echo(f"batchq: warning: the dashboard listens on {host}: {exposed}", err=True)
    try:
        server = make_server(queue, guard, host, port, refresh, allowed)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    state = "actions need the token" if guard.mode.actions else guard.mode.why_read_only
    click.echo(f"batchq dashboard on {' and '.join(urls(server))} ({state}); Ctrl-C stops it", err=True)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
