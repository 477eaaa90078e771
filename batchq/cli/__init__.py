"""The `batchq` command. Quiet when all is well: cron mails whatever it prints.

Exit statuses (decided in common.py): 0 all well; 1 the command could not do its work
(unreachable database, missing schema, nothing by that name); 2 a mistake in the command or its
configuration (bad option, value or URL); 3 a sweep found something a human should look at.
One module per group of commands; this one makes the group and adds them.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from ..core.config import URL_ENV
from ..errors import BatchqError
from .common import URL_HELP, VERBOSE_HELP, fail_batchq, fail_click, set_verbosity

# Each command's module and attribute, imported only when the command runs (or --help lists it):
# `batchq run`, started once a minute by cron and timed from its spawn in bench/, then loads no
# prometheus_client, croniter, message-queue or dashboard code (about 100 ms of imports).
COMMANDS = {
    "init-db": "jobs:init_db",
    "run": "jobs:run",
    "gc-processing": "sweeps:gc_processing",
    "gc-error": "sweeps:gc_error",
    "stats": "queues:stats",
    "enqueue": "jobs:enqueue",
    "cancel": "jobs:cancel",
    "pause": "queues:pause",
    "resume": "queues:resume",
    "purge": "queues:purge",
    "locks": "locks:locks",
    "partitions": "partitions:partitions",
    "status": "workers:status",
    "stop": "workers:stop",
    "tick": "schedules:tick",
    "schedule": "schedules:schedule",
    "explain": "explain:explain",
    "result": "results:result",
    "metrics": "metrics:metrics",
    "history": "history:history",
    "prune": "history:prune",
    "configure": "configure:configure",
    "dashboard": "dashboard:dashboard",
    "mq": "mq:mq",
    "consume": "consume:consume",
}


class BatchqGroup(click.Group):
    """Turns every error, batchq's and click's, into one line on stderr and its exit status
    (common.fail_batchq, common.fail_click); loads each command's module on first use (COMMANDS)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *(name for name in super().list_commands(ctx) if name not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            module, attr = COMMANDS[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(f"{__name__}.{module}"), attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:  # the group's own options: `batchq --nosuch run`
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            fail_click(exc)

    def invoke(self, ctx: click.Context) -> Any:
        try:  # the subcommand's parsing (and a sub-group's), then its work
            return super().invoke(ctx)
        except click.ClickException as exc:
            fail_click(exc)
        except BatchqError as exc:
            fail_batchq(exc)


@click.group(cls=BatchqGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar=URL_ENV, show_envvar=True, metavar="URL", help=URL_HELP)
@click.option("-v", "--verbose", count=True, help=VERBOSE_HELP)
@click.version_option(package_name="batchq")
@click.pass_context
def cli(ctx: click.Context, url: str | None, verbose: int) -> None:
    """batchq: a job queue in the database you already run."""
    set_verbosity(verbose)
    ctx.obj = {"url": url}


def main() -> None:
    cli(prog_name="batchq")
