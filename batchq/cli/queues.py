"""Commands on queues: counts, pause and resume, purge."""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import Any

import click

from ..core.config import counted
from ..mq.overview import queue_figures
from ..policy.settings import JobQueueSettings
from ..queue import QueueStats
from .common import age, common_options, n_jobs, open_queue, print_json, printable, usage_error
from .mq import print_mq_table


@click.command()
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Per-queue counts: ready, delayed, blocked (waiting for a concurrency slot), processing (and
    the oldest's age), failed, and the settings that are set (`batchq configure`); jobs waiting
    for a worker that knows their task's version; then the message queues (`batchq mq stats`).
    First, how workers claim: the row claim's statement, and the partitions of `run --claim
    partition` with how many are leased, when they are set up."""
    queue = open_queue(ctx)
    settings = queue.backend.stores.settings.job_queues()
    rows = _with_settings(queue.stats(), settings)
    messages = queue_figures(queue.backend)
    parts = queue.partitions()
    leased = sum(info.held for info in parts)
    if as_json:
        print_json(
            {
                "backend": queue.backend.describe(),
                "liveness": queue.backend.liveness.describe(),
                "partitions": {"count": len(parts), "leased": leased},
                "queues": [{**asdict(r), "settings": _set(settings, r.queue)} for r in rows],
                "message_queues": [f.as_dict() | {"settings": f.settings()} for f in messages],
            }
        )
        return
    click.echo(queue.backend.describe())
    click.echo(queue.backend.liveness.describe())
    if parts:
        click.echo(
            f"partitioned claims (run --claim partition): {counted(len(parts), 'partition')}, "
            f"{leased} leased now"
        )
    header = (
        f"{'queue':<20} {'ready':>8} {'delayed':>8} {'blocked':>8} {'processing':>10} {'oldest':>8} "
        f"{'failed':>8}  settings"
    )
    click.echo(header)
    for r in rows:
        oldest = age(r.oldest_processing_seconds) if r.oldest_processing_seconds is not None else "-"
        name = r.queue + (" (paused)" if r.paused else "")
        shown = ", ".join(
            f"{k} {printable(str(v))}" for k, v in _set(settings, r.queue).items() if k != "paused"
        )
        click.echo(
            f"{name:<20} {r.ready:>8} {r.delayed:>8} {r.blocked:>8} {r.processing:>10} {oldest:>8} "
            f"{r.failed:>8}  {shown or '-'}"
        )
    for r in rows:
        if r.waiting_for_version:
            one = r.waiting_for_version == 1
            click.echo(
                f"queue {r.queue}: {n_jobs(r.waiting_for_version)} {'waits' if one else 'wait'} for a "
                f"worker that knows a newer version of {'its' if one else 'their'} task (outdated "
                f"workers put {'it' if one else 'them'} back): deploy the new code to every worker; "
                "`batchq explain ID` names the worker"
            )
    if messages:
        print_mq_table(messages)


def _set(settings: dict[str, JobQueueSettings], name: str) -> dict[str, Any]:
    found = settings.get(name)
    return {} if found is None else found.settings()


def _with_settings(rows: list[QueueStats], settings: dict[str, JobQueueSettings]) -> list[QueueStats]:
    """The queues with jobs, and those with no job but a setting set (a bound, a type, keep_for)."""
    named = {r.queue for r in rows}
    more = [QueueStats(name) for name, s in settings.items() if name not in named and s.settings()]
    return sorted(rows + more, key=lambda r: r.queue)


@click.command()
@common_options
@click.argument("queue_name", metavar="QUEUE")
@click.pass_context
def pause(ctx: click.Context, queue_name: str) -> None:
    """Stop workers claiming from a queue (enqueue goes on)."""
    open_queue(ctx).pause(queue_name)


@click.command()
@common_options
@click.argument("queue_name", metavar="QUEUE")
@click.pass_context
def resume(ctx: click.Context, queue_name: str) -> None:
    """Let workers claim from a paused queue again."""
    open_queue(ctx).resume(queue_name)


@click.command()
@common_options
@click.argument("queue_name", metavar="QUEUE")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def purge(ctx: click.Context, queue_name: str, yes: bool) -> None:
    """Delete a queue's ready and failed jobs (jobs being run are left alone)."""
    if not yes and not sys.stdin.isatty():
        usage_error("purge asks for confirmation: add --yes when there is no terminal")
    if not yes:
        click.confirm(f"Delete every ready and failed job of queue {queue_name!r}?", abort=True)
    click.echo(f"deleted {n_jobs(open_queue(ctx).purge(queue_name))}")
