"""Commands on the job history: list it and prune it (how long a queue keeps it: `batchq configure`)."""

from __future__ import annotations

import json
import logging

import click

from ..core.config import counted, format_time
from ..jobs.history import HistoryEntry, format_seconds
from ..queue import HISTORY_LIMIT_RANGE
from .common import DURATION, common_options, open_queue, print_json

RESULT_SHOWN_CHARS = 60  # the text listing cuts a result (or an error) to this


@click.command()
@common_options
@click.option("--queue", metavar="Q", help="Only jobs of this queue.")
@click.option("--task", metavar="TASK", help="Only jobs of this task.")
@click.option("--since", type=DURATION, help="Only jobs finished within this long (e.g. 1h).")
@click.option("--failed", "outcome", flag_value="failed", help="Only jobs that failed for good.")
@click.option("--succeeded", "outcome", flag_value="succeeded", help="Only jobs that succeeded.")
@click.option("--id", "job_id", type=int, metavar="ID", help="Only this job.")
@click.option(
    "--limit",
    type=click.IntRange(*HISTORY_LIMIT_RANGE),
    default=50,
    show_default=True,
    help="At most this many",
)
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON.")
@click.pass_context
def history(
    ctx: click.Context,
    queue: str | None,
    task: str | None,
    since: float | None,
    outcome: str | None,
    job_id: int | None,
    limit: int,
    as_json: bool,
) -> None:
    """Finished jobs kept in the history, newest first: outcome, tries, times, wall and CPU time,
    memory, result. Kept for queues with a keep_for (`batchq configure`) and by `run --keep`."""
    failed = None if outcome is None else outcome == "failed"
    entries = open_queue(ctx).history(
        queue=queue, task=task, since=since, failed=failed, job_id=job_id, limit=limit
    )
    if as_json:
        print_json([entry.as_dict() for entry in entries])
        return
    if not entries:
        click.echo("no finished jobs kept that match")
        return
    click.echo(
        f"{'id':>8} {'finished (UTC)':<19} {'queue':<12} {'task':<24} {'outcome':<9} {'tries':>5} "
        f"{'wall':>8} {'cpu':>8} {'peak MB':>8}  result"
    )
    for entry in entries:
        click.echo(_line(entry))


def _line(entry: HistoryEntry) -> str:
    finished = format_time(entry.finished_at).removesuffix(" UTC")
    peak = "-" if entry.memory_peak_bytes is None else f"{entry.memory_peak_bytes / 1e6:.1f}"
    return (
        f"{entry.id:>8} {finished:<19} {entry.queue:<12} {entry.task:<24} {entry.outcome:<9} "
        f"{entry.attempts:>5} {_secs(entry.wall_seconds):>8} {_secs(entry.cpu_seconds):>8} {peak:>8}  "
        f"{_shown(entry)}"
    )


def _secs(value: float | None) -> str:
    return "-" if value is None else format_seconds(value)


def _shown(entry: HistoryEntry) -> str:
    """The result as JSON (or its note), or a failure's first error line, cut short."""
    if entry.outcome == "failed":
        text = (entry.error or "").splitlines()[0] if entry.error else ""
    elif entry.result_note:
        text = f"({entry.result_note})"
    else:
        text = "" if entry.result is None else json.dumps(entry.result, ensure_ascii=False)
    return text if len(text) <= RESULT_SHOWN_CHARS else text[: RESULT_SHOWN_CHARS - 3] + "..."


@click.command()
@common_options
@click.option(
    "--older-than",
    type=DURATION,
    help="Delete every record finished longer ago than this (e.g. 30d). Default: each queue's "
    "records older than its keep_for.",
)
@click.option("--queue", metavar="Q", help="Only this queue's records.")
@click.pass_context
def prune(ctx: click.Context, older_than: float | None, queue: str | None) -> None:
    """Delete old history records, 1,000 per statement, each statement its own short transaction.

    Quiet (for cron); -v logs how many were deleted.
    """
    deleted = open_queue(ctx).prune(older_than, queue=queue)
    logging.getLogger("batchq").info("pruned %s", counted(deleted, "history record"))
