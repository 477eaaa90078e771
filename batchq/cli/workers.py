"""`batchq status` (the worker registry) and `batchq stop` (ask workers to exit)."""

from __future__ import annotations

from dataclasses import asdict

import click

from ..core.config import counted
from ..ops.registry import WorkerInfo, list_workers, request_stop
from .common import age, common_options, open_queue, print_json


@click.command()
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """The workers that run (`batchq run`): host and pid, queues, state (running; stopping, when
    asked to; gone, when its liveness says it died; unknown, for another host's worker on
    SQLite), how long it has run, jobs done and failed, the job it runs and for how long, and
    when it was last seen (about once a second while it claims); with --json, the progress that
    job's try reported too (job_progress, job_progress_message). Nothing when none runs."""
    workers = list_workers(open_queue(ctx).backend)
    if as_json:
        print_json([asdict(info) for info in workers])
        return
    if not workers:
        return
    click.echo(
        f"{'worker':<40} {'queues':<20} {'state':<9} {'up':>8} {'done':>8} {'failed':>7} "
        f"{'job':>10} {'for':>8} {'seen':>8}"
    )
    for info in workers:
        click.echo(
            f"{_shown(info.name):<40} {_shown(','.join(info.serves)):<20} {info.state:<9} "
            f"{age(info.running_seconds):>8} {info.jobs_done:>8} {info.jobs_failed:>7} "
            f"{_job(info):>10} {_job_age(info):>8} {age(info.seen_seconds_ago) + ' ago':>8}"
        )


@click.command()
@common_options
@click.option("--host", help="Only workers of this host.")
@click.option("--queue", "queue_name", metavar="Q", help="Only workers serving this queue.")
@click.option("--worker", "name", metavar="NAME", help="Only this worker (as `batchq status` names it).")
@click.pass_context
def stop(ctx: click.Context, host: str | None, queue_name: str | None, name: str | None) -> None:
    """Ask workers (every one, without a filter) to finish the job at hand and exit 0. They see
    it within about a second, or when their current job ends; `batchq status` shows them
    stopping meanwhile. Prints how many were asked: not those gone (dead, not yet pruned)."""
    asked = request_stop(open_queue(ctx).backend, host=host, queue=queue_name, name=name)
    click.echo(f"asked {counted(asked, 'worker')} to stop")


def _job(info: WorkerInfo) -> str:
    if info.job_id is None:
        return "-"
    return str(info.job_id) + (f" +{info.jobs_held - 1}" if info.jobs_held > 1 else "")


def _job_age(info: WorkerInfo) -> str:
    return "-" if info.job_id is None else age(info.job_seconds)


def _shown(text: str) -> str:
    """A name as one printable line: a row written by hand may hold anything."""
    return text if text.isprintable() else repr(text)
