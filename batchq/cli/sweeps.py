"""The sweeps cron runs, and their reports: quiet when all is well, exit 3 when a human must act."""

from __future__ import annotations

import shlex
from datetime import datetime
from functools import partial

import click

from ..core.config import format_time, parse_utc_time
from ..core.failures import FailureGroup, group_failures
from ..jobs.heartbeat import DEFAULT_HEARTBEAT_SECONDS
from ..jobs.history import format_usage
from ..jobs.tasks import load_trusted
from ..runtime import sweeps
from .common import DURATION, age, common_options, n_jobs, open_queue, report_found, usage_error

JOBS_SHOWN_PER_GROUP = 3  # gc-error's text report: a few jobs of each group, then a count


@click.command("gc-processing")
@common_options
@click.option(
    "--older-than",
    type=DURATION,
    default=sweeps.DEFAULT_OLDER_THAN_SECONDS,
    show_default="1h",
    help="Report jobs of live workers running longer than this.",
)
@click.option(
    "--ghost-after",
    type=DURATION,
    default=None,
    help="Also take a worker for gone when the database session holding its lock has sat idle "
    "this long (a ghost left by a dropped connection); at least twice --worker-heartbeat. "
    "Default: off.",
)
@click.option(
    "--worker-heartbeat",
    type=DURATION,
    default=DEFAULT_HEARTBEAT_SECONDS,
    show_default="30s",
    help="The workers' `run --heartbeat` (the slowest, if they differ): --ghost-after shorter than "
    "two of them is refused, as it would put back the job of a live worker. (The sweep also "
    "waits two of the heartbeat each worker registered.)",
)
@click.option("--hook", metavar="PATH", help="Call pkg.mod:func with the affected jobs (a list of dicts).")
@click.option("--json", "as_json", is_flag=True, help="Print the affected jobs as JSON.")
@click.pass_context
def gc_processing(
    ctx: click.Context,
    older_than: float,
    ghost_after: float | None,
    worker_heartbeat: float,
    hook: str | None,
    as_json: bool,
) -> None:
    """Put back jobs of dead workers at once; report long runners of live ones.

    Quiet and exit 0 when nothing is stuck; a report and exit 3 otherwise. Waiting jobs past
    their expiry (enqueue(expires=...)) are failed as expired on the way, as workers do: see
    them with gc-error.
    """
    sweeps.check_ghost_after(ghost_after, worker_heartbeat)  # a ConfigError: exit 2, one line
    hook_fn = load_trusted(hook) if hook else None
    report = sweeps.gc_processing(open_queue(ctx), older_than, ghost_after, worker_heartbeat)
    jobs = [job.as_dict() for job in report.jobs]
    report_found(jobs, hook_fn, as_json, lambda: _processing_report(report, older_than))


@click.command("gc-error")
@common_options
@click.option("--queue", "queues", multiple=True, metavar="Q", help="Only this queue (repeatable).")
@click.option("--id", "ids", multiple=True, type=int, metavar="ID", help="Only this job (repeatable).")
@click.option(
    "--group",
    "groups",
    multiple=True,
    metavar="FP",
    help="Only this failure group, by fingerprint (repeatable).",
)
@click.option(
    "--failed-by",
    metavar="TIME",
    callback=lambda ctx, param, value: None if value is None else parse_utc_time(value, "--failed-by"),
    help="Only jobs whose last failure came no later than TIME (ISO 8601, UTC without an offset): "
    "the hint under a listing gives it, so that acting on a group leaves alone jobs that failed since.",
)
@click.option("--requeue", is_flag=True, help="Give the failed jobs a fresh set of tries, due now.")
@click.option("--delete", is_flag=True, help="Delete the failed jobs.")
@click.option("--hook", metavar="PATH", help="Call pkg.mod:func with the affected jobs (a list of dicts).")
@click.option("--json", "as_json", is_flag=True, help="Print the affected jobs as JSON.")
@click.pass_context
def gc_error(
    ctx: click.Context,
    queues: tuple[str, ...],
    ids: tuple[int, ...],
    groups: tuple[str, ...],
    failed_by: datetime | None,
    requeue: bool,
    delete: bool,
    hook: str | None,
    as_json: bool,
) -> None:
    """List jobs that failed max_errors times, grouped by cause; --requeue or --delete them.

    Quiet and exit 0 when there are none; a report and exit 3 otherwise.
    """
    if requeue and delete:
        usage_error("--requeue and --delete cannot be used together: give one of them")
    action = "requeue" if requeue else "delete" if delete else None
    hook_fn = load_trusted(hook) if hook else None
    jobs = sweeps.gc_error(open_queue(ctx), action, queues, ids, groups, failed_by)
    report = partial(_failed_report, jobs, action, bool(ids))
    report_found([job.as_dict() for job in jobs], hook_fn, as_json, report)


def _processing_report(report: sweeps.ProcessingReport, older_than: float) -> str:
    parts = []
    if report.requeued:
        parts.append(f"{n_jobs(len(report.requeued))} of dead workers put back")
    if report.long_running:
        parts.append(f"{n_jobs(len(report.long_running))} running longer than {age(older_than)}")
    if report.unhandled:
        parts.append(f"{n_jobs(len(report.unhandled))} that could not be put back")
    if report.unrunnable:
        parts.append(f"{n_jobs(len(report.unrunnable))} no worker will claim")
    lines = ["batchq gc-processing: " + ", ".join(parts)]
    for job in report.requeued:
        outcome = "failed (out of tries)" if job.failed else "put back"
        no_token = "; it had no claim token" if job.claim_token is None else ""
        ran = age(job.age_seconds)
        lines.append(f"  {outcome:<22}{_named(job)}: worker {_owner(job)} is gone (ran {ran}){no_token}")
    for job in report.long_running:
        alive = "is alive" if job.worker_alive else "cannot be checked"
        lines.append(
            f"  {'still running':<22}{_named(job)}: worker {_owner(job)} {alive},"
            f" running for {age(job.age_seconds)}"
        )
    for job in report.unhandled:
        lines.append(f"  {'not put back':<22}{_named(job)}: worker {_owner(job)} is gone; {job.error}")
    for job in report.unrunnable:
        lines.append(
            f"  {'never claimed':<22}{_named(job)}: status "
            f"{job.status!r}, priority {job.priority!r} (fix or delete the row)"
        )
    return "\n".join(lines)


def _named(job: sweeps.StuckJob | sweeps.FailedJob) -> str:
    return f"#{job.id} {job.queue} {job.task}"


def _owner(job: sweeps.StuckJob) -> str:
    return job.locked_by or "(none recorded)"


def _failed_report(jobs: list[sweeps.FailedJob], action: str | None, by_id: bool = False) -> str:
    """One block per cause (failure group), largest first: the cron mail of 500 jobs failing
    for one reason is one block, with a few of its jobs and the command that acts on it (on
    those jobs only: ``by_id`` when the listing was limited to some jobs by id)."""
    groups = group_failures(jobs)
    causes = "1 cause" if len(groups) == 1 else f"{len(groups)} causes"
    held = sum(job.key_held_by is not None for job in jobs)  # --requeue: their unique key is taken
    full = sum(job.queue_full is not None for job in jobs)  # --requeue: their queue is full
    lines = [f"batchq gc-error: {_counted(jobs, action, held + full)}, {causes}"]
    if held:
        lines[0] += f"; {n_jobs(held)} not requeued: another job holds its unique key"
    if full:
        lines[0] += f"; {n_jobs(full)} not requeued: their queue is full (overflow reject)"
    jobs_by_id = {job.id: job for job in jobs}
    for group in groups:
        lines.append(
            f"  group {group.fingerprint}: {n_jobs(group.count)}, queue {', '.join(group.queues)}, "
            f"task {', '.join(group.tasks)}, last failed {_seen(group.first_seen, group.last_seen)}"
        )
        shown = group.job_ids[:JOBS_SHOWN_PER_GROUP]
        lines.extend(f"    {_failed_line(jobs_by_id[job_id])}" for job_id in shown)
        if group.count > JOBS_SHOWN_PER_GROUP:
            lines.append(f"    ... and {n_jobs(group.count - JOBS_SHOWN_PER_GROUP)} more")
        if action is None:
            lines.append(f"    act on it: {_act_on(group, by_id)} --requeue (or --delete)")
    return "\n".join(lines)


def _act_on(group: FailureGroup, by_id: bool) -> str:
    """The command that acts on the group as it was listed: its queues (and its jobs, when the
    listing was by id), and only jobs that had failed by then: never the cause's failed jobs in
    queues the report did not show, nor those that failed after it."""
    words = ["batchq", "gc-error"]
    for name in group.queues:
        words += ["--queue", name]
    for job_id in group.job_ids if by_id else ():
        words += ["--id", str(job_id)]
    words += ["--group", group.fingerprint]
    if group.failed_by is not None:
        words += ["--failed-by", group.failed_by.isoformat()]
    return shlex.join(words)


def _counted(jobs: list[sweeps.FailedJob], action: str | None, kept: int) -> str:
    """'5 jobs requeued'; a listing tells jobs out of tries from jobs a full queue dropped."""
    if action is not None:
        return f"{n_jobs(len(jobs) - kept)} {'requeued' if action == 'requeue' else 'deleted'}"
    dropped = sum(job.dropped for job in jobs)
    parts = [f"{n_jobs(len(jobs) - dropped)} out of tries"] if dropped < len(jobs) else []
    if dropped:
        parts.append(f"{n_jobs(dropped)} dropped from full queues (drop_oldest)")
    return ", ".join(parts)


def _failed_line(job: sweeps.FailedJob) -> str:
    first_line = (job.last_error or "").splitlines()[:1] or [""]
    errors = _errors(job)
    kept = (
        ""
        if job.key_held_by is None
        else f"not requeued, job {job.key_held_by} holds its unique key {job.unique_key!r}; "
    )
    if job.queue_full is not None:
        kept = f"not requeued, {job.queue_full}; "
    line = f"{_named(job)} ({errors}): {kept}{first_line[0][:200]}"
    if job.last_wall_seconds is None:
        return line
    usage = format_usage(
        job.last_wall_seconds,
        job.last_cpu_seconds,
        job.last_memory_peak_bytes,
        job.last_memory_growth_bytes,
        job.last_worker,
    )
    return f"{line}\n      last try: {usage}"


def _errors(job: sweeps.FailedJob) -> str:
    if job.error_count_before is not None:
        return f"{_n_errors(job.error_count_before)}, reset to 0"
    if not job.dropped:
        return _n_errors(job.error_count)
    # Dropped while waiting: never out of tries; maybe after a few while backing off.
    tries = "" if str(job.error_count) == "0" else f" after {_n_errors(job.error_count)}"
    return f"dropped while waiting{tries}"


def _n_errors(count: object) -> str:
    """'1 error', '3 errors'; a count written by hand (any value) as stored."""
    return f"{count} error" + ("" if str(count) == "1" else "s")


def _seen(first: datetime | str | None, last: datetime | str | None) -> str:
    if first == last:
        return format_time(last)
    return f"from {format_time(first)} to {format_time(last)}"
