"""`batchq mq`: the message queues (batchq.MessageQueue) as an operator tends them."""

from __future__ import annotations

import logging

import click

from ..config import counted
from ..mq import MessageQueue
from ..mq.archive import PRUNE_BATCH
from .common import DURATION, common_options, existing_only

log = logging.getLogger("batchq.mq")


@click.group("mq")
def mq() -> None:
    """Message queues (batchq.MessageQueue)."""


@mq.command("prune")
@common_options
@click.option(
    "--older-than",
    "older_than",
    type=DURATION,
    required=True,
    help="Delete what was archived before then (30d).",
)
@click.option("--queue", "queue_name", default=None, metavar="QUEUE", help="Only this queue's archive.")
@click.option(
    "--batch",
    type=click.IntRange(1, 100_000),
    default=PRUNE_BATCH,
    show_default=True,
    help="Rows deleted per transaction: each holds its locks only that long.",
)
@click.pass_context
def prune(ctx: click.Context, older_than: float, queue_name: str | None, batch: int) -> None:
    """Delete archived messages older than --older-than (by their archived_at, on the database
    server's clock), in batches of --batch rows, each its own transaction, so archivers and
    readers never wait long. Quiet: -v prints how many went."""
    queues = MessageQueue(ctx.obj["url"])
    existing_only(queues)
    ctx.call_on_close(queues.close)
    pruned = queues.prune_archive(older_than, queue=queue_name, batch=batch)
    log.info("pruned %s", counted(pruned, "archived message"))
