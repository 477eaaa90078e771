"""`batchq tick` and `batchq schedule ...`: cron schedules from the shell (batchq.jobs.schedules).

Registered in batchq/cli/__init__.py. Quiet when all is well, as every command cron runs.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from datetime import datetime
from typing import Any

import click

from ..core.config import counted
from ..errors import BackendError
from ..jobs.cron import CATCH_UP_POLICIES
from ..jobs.schedules import Schedule, TickReport
from ..jobs.tasks import TASK_MODULES_ENV
from ..ops import charts
from ..queue import Queue
from .common import common_options, fail, open_queue, print_json

log = logging.getLogger("batchq")

_task_modules = click.option(
    "--task-modules",
    envvar=TASK_MODULES_ENV,
    show_envvar=True,
    metavar="M1,M2",
    help="Modules whose functions jobs may call, by exact name; 'pkg.*' for every submodule of pkg.",
)


def tick_once(queue: Queue) -> TickReport:
    """Enqueue the due schedules' jobs; log each with -v. Failures are logged as warnings. Then
    sample the dashboard's charts for this minute (batchq.ops.charts), after the jobs are written."""
    report = queue.tick()
    for job in report.enqueued:
        log.info("schedule %s: job #%d for %s", job.schedule, job.job_id, job.slot.isoformat())
    for name in report.skipped:
        log.info("schedule %s: slot missed, skipped (catch_up none)", name)
    sample_charts(queue)
    return report


def sample_charts(queue: Queue) -> None:
    """One tick a minute samples the charts; a failure is a warning, never a failed tick: the
    next tick counts the minutes this one missed (up to charts.BACKFILL_MINUTES)."""
    try:
        done = charts.sample(queue.backend)
    except BackendError as exc:
        log.warning("charts: this minute was not sampled (%s); the next tick tries again", exc)
        return
    if not done.skipped:
        log.info(
            "charts: minute %d sampled, %d queues, %d rows pruned", done.minute, done.queues, done.pruned
        )


@click.command()
@common_options
@_task_modules
@click.pass_context
def tick(ctx: click.Context, task_modules: str | None) -> None:
    """Enqueue one job for each due slot of every schedule (run it from cron on every host).

    Quiet and exit 0 when all is well; a schedule whose job cannot be written is reported on
    stderr (exit 1) and tried again at the next tick; slots a full bounded queue refuses
    (overflow reject) are reported too (exit 1), and not tried again. Once a minute (on one
    host) a tick also samples the queues for the dashboard's charts.
    """
    report = tick_once(open_queue(ctx, task_modules))
    if report.failed:  # each logged above with its reason
        names = ", ".join(name for name, _ in report.failed)
        count = counted(len(report.failed), "schedule")
        fail(f"{count} could not enqueue ({names}): the next tick tries again")
    if report.refused:  # each logged above: a full bounded queue (overflow reject)
        fail(
            f"{counted(len(report.refused), 'schedule')} had due slots a full queue refused: not tried again"
        )


@click.group()
def schedule() -> None:
    """Cron schedules: add, list, remove, pause, resume, sync a file."""


@schedule.command("add")
@common_options
@click.argument("name")
@click.argument("cron")
@click.argument("task")
@click.option("--tz", default="UTC", show_default=True, help="IANA time zone the expression is read in.")
@click.option(
    "--payload", metavar="JSON", help="A JSON object each job gets (with batchq_schedule, batchq_slot)."
)
@click.option("--queue", default="default", show_default=True)
@click.option("--priority", type=int, default=0, show_default=True, help="Higher runs first.")
@click.option("--max-errors", type=int, default=10, show_default=True)
@click.option(
    "--catch-up",
    type=click.Choice(CATCH_UP_POLICIES),
    default="latest",
    show_default=True,
    help="Slots missed while nothing ticked: one job for the latest, one per slot, or none.",
)
@click.option(
    "--catch-up-limit",
    type=int,
    default=100,
    show_default=True,
    help="With --catch-up all: at most this many.",
)
@_task_modules
@click.pass_context
def add(
    ctx: click.Context,
    name: str,
    cron: str,
    task: str,
    tz: str,
    payload: str | None,
    queue: str,
    priority: int,
    max_errors: int,
    catch_up: str,
    catch_up_limit: int,
    task_modules: str | None,
) -> None:
    """Create or update schedule NAME: run TASK at each slot of CRON (`0 7 * * mon-fri`)."""
    open_queue(ctx, task_modules).schedule(
        name,
        cron,
        task,
        tz=tz,
        payload=_json_object(payload),
        queue=queue,
        priority=priority,
        max_errors=max_errors,
        catch_up=catch_up,
        catch_up_limit=catch_up_limit,
    )


@schedule.command("list")
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def list_schedules(ctx: click.Context, as_json: bool) -> None:
    """Every schedule with its next and last run (times in its own time zone)."""
    schedules = open_queue(ctx).schedules
    rows = schedules.list()
    if as_json:
        print_json([_as_json(s) for s in rows])
        return
    now = schedules.server_now()
    click.echo(f"{'name':<20} {'state':<7} {'cron':<18} {'next run':<36} {'last run':<28} task")
    for s in rows:
        state = "problem" if s.problem else "active" if s.enabled else "paused"
        click.echo(
            f"{s.name:<20} {state:<7} {s.cron:<18} {_next_run(s, now):<36} {_last_run(s):<28} "
            f"{s.task} ({s.queue})"
        )
        if s.problem:
            click.echo(f"  {s.problem}")


@schedule.command("remove")
@common_options
@click.argument("name")
@click.pass_context
def remove(ctx: click.Context, name: str) -> None:
    """Delete schedule NAME (the jobs it enqueued stay); exit 1 if there is none."""
    _found(open_queue(ctx).schedules.remove(name), name)


@schedule.command("pause")
@common_options
@click.argument("name")
@click.pass_context
def pause(ctx: click.Context, name: str) -> None:
    """Stop schedule NAME until it is resumed; exit 1 if there is none."""
    _found(open_queue(ctx).schedules.pause(name), name)


@schedule.command("resume")
@common_options
@click.argument("name")
@click.pass_context
def resume(ctx: click.Context, name: str) -> None:
    """Start paused schedule NAME again from its next slot after now (the slots it missed are skipped)."""
    schedules = open_queue(ctx).schedules
    if schedules.get(name) is None:
        _found(False, name)
    schedules.resume(name)


@schedule.command("sync")
@common_options
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--prune", is_flag=True, help="Also delete the schedules the file does not name.")
@_task_modules
@click.pass_context
def sync(ctx: click.Context, path: str, prune: bool, task_modules: str | None) -> None:
    """Create and update the schedules of a TOML file ([schedules.NAME] tables); prints what changed.

    Every schedule is checked before anything is written, and all are written in one transaction.
    """
    report = open_queue(ctx, task_modules).schedules.sync_file(path, prune=prune)
    for verb, names in (
        ("created", report.created),
        ("updated", report.updated),
        ("removed", report.removed),
    ):
        for name in names:
            click.echo(f"{verb} {name}")


def _found(done: bool, name: str) -> None:
    if not done:
        fail(f"no schedule named {name!r} (see `batchq schedule list`)")


def _json_object(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="--payload") from None
    if not isinstance(value, dict):
        raise click.BadParameter('use a JSON object, as in \'{"list": "weekly"}\'', param_hint="--payload")
    return value


def _next_run(s: Schedule, now: float) -> str:
    if s.next_exec is None:
        return "-"
    if not s.enabled:
        return "(paused)"
    seconds = s.next_exec.timestamp() - now
    when = "due now" if seconds <= 0 else f"in {_span(seconds)}"
    return f"{_time(s.next_exec)} ({when})"


def _last_run(s: Schedule) -> str:
    if s.last_slot is None:
        return "never"
    return f"{_time(s.last_slot)} #{s.last_job_id}"


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S%z")


def _span(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"


def _as_json(s: Schedule) -> dict[str, Any]:
    data = asdict(s)
    for key in ("next_exec", "last_slot", "last_run_at"):
        data[key] = None if data[key] is None else data[key].isoformat()
    return data
