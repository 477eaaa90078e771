"""The `batchq` command. Quiet when all is well: cron mails whatever it prints.

Exit statuses: 0 all well; 1 an error (bad URL, unreachable database, missing
schema); 2 a usage error; 3 a sweep found something a human should look at.
One module per group of commands; this one makes the group and adds them.
"""

from __future__ import annotations

from typing import Any

import click

from ..config import URL_ENV
from ..errors import BatchqError
from . import (
    consume,
    dashboard,
    explain,
    history,
    jobs,
    locks,
    metrics,
    mq,
    partitions,
    queues,
    schedules,
    sweeps,
    workers,
)
from .common import URL_HELP, VERBOSE_HELP, set_verbosity


class BatchqGroup(click.Group):
    """Turns batchq's own errors into one line on stderr and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BatchqError as exc:
            click.echo(f"batchq: error: {exc}", err=True)
            ctx.exit(1)


@click.group(cls=BatchqGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar=URL_ENV, show_envvar=True, metavar="URL", help=URL_HELP)
@click.option("-v", "--verbose", count=True, help=VERBOSE_HELP)
@click.version_option(package_name="batchq")
@click.pass_context
def cli(ctx: click.Context, url: str | None, verbose: int) -> None:
    """batchq: a job queue in the database you already run."""
    set_verbosity(verbose)
    ctx.obj = {"url": url}


for command in (
    jobs.init_db,
    jobs.run,
    sweeps.gc_processing,
    sweeps.gc_error,
    queues.stats,
    jobs.enqueue,
    jobs.cancel,
    queues.pause,
    queues.resume,
    queues.purge,
    locks.locks,
    partitions.partitions,
    workers.status,
    workers.stop,
    schedules.tick,
    schedules.schedule,
    explain.explain,
    metrics.metrics,
    history.history,
    history.prune,
    history.configure,
    dashboard.dashboard,
    mq.mq,
    consume.consume,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="batchq")
