"""`batchq dashboard`: serve the web dashboard (needs the extra: pip install 'batchq[dashboard]')."""

from __future__ import annotations

import os

import click

from .common import common_options, fail, open_queue, usage_error

INSTALL_HINT = "pip install 'batchq[dashboard]'"


@click.command()
@common_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on."
)
@click.option("--read-only", is_flag=True, help="Offer no action, even with BATCHQ_DASHBOARD_TOKEN set.")
@click.option(
    "--refresh",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0, 3600),
    metavar="SECONDS",
    help="How often a page refreshes itself (0: never).",
)
@click.pass_context
def dashboard(ctx: click.Context, host: str, port: int, read_only: bool, refresh: float) -> None:
    """Serve a web dashboard: queues (pause, resume), a queue's jobs, one job (payload, last error,
    explain; cancel), failure groups (requeue, delete), workers, schedules, locks, and the
    Prometheus metrics at /metrics. Actions need BATCHQ_DASHBOARD_TOKEN (sign in with it) and are
    off without it or with --read-only."""
    try:
        from ..dashboard import TOKEN_ENV, Guard, is_loopback, make_server, urls
    except ImportError as exc:
        usage_error(f"the dashboard needs {exc.name}: {INSTALL_HINT}")  # as a driver the URL needs
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
        server = make_server(queue, guard, host, port, refresh)
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
