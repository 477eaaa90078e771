"""Commands on jobs: create the tables, run the worker, enqueue, cancel."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

import click

from ..coordination.partitions import DEFAULT_JOBS_PER_LEASE
from ..coordination.slots import host_slot
from ..core.config import check_queue_name, counted
from ..errors import TaskError
from ..jobs.heartbeat import DEFAULT_HEARTBEAT_SECONDS
from ..jobs.hooks import MIDDLEWARE_ENV, load_middleware, middleware_paths
from ..jobs.tasks import TASK_MODULES_ENV
from ..jobs.timeouts import DEFAULT_GRACE_SECONDS, WATCHDOG_EXIT_STATUS
from ..ops.explain import why_not_cancelled
from ..queue import Queue
from ..runtime.lanes import MAX_CONCURRENCY
from ..runtime.worker import BACKOFF_BASE_SECONDS, RunOptions, Worker, check_concurrency
from .common import (
    DURATION,
    common_options,
    duration_or_when_value,
    fail,
    n_jobs,
    open_queue,
    timeout_value,
    usage_error,
    when_value,
)


@click.command("init-db")
@common_options
@click.pass_context
def init_db(ctx: click.Context) -> None:
    """Create the tables, or migrate them to this version (idempotent, quiet)."""
    applied = open_queue(ctx).init_db()
    for name in applied:
        logging.getLogger("batchq").info("applied migration %s", name)


@click.command()
@common_options
@click.option(
    "--queue",
    "queues",
    multiple=True,
    metavar="Q",
    default=("default",),
    show_default=True,
    help="Queue to work on; repeat for several, tried in order. Only the queues named are "
    "served (with -v, a run that found nothing names other queues with due jobs).",
)
@click.option("--max-jobs", type=click.IntRange(min=1), help="Exit after this many jobs.")
@click.option(
    "--max-seconds",
    type=DURATION,
    help="Exit after this long: a soft limit, checked between jobs (a job at hand finishes; see --timeout).",
)
@click.option(
    "--timeout",
    metavar="DURATION",
    callback=timeout_value,
    help="Stop a job that runs longer and count it as a failure (for jobs whose own timeout and "
    "task's @task(timeout=...) are unset). Default: none.",
)
@click.option(
    "--timeout-grace",
    metavar="DURATION",
    callback=timeout_value,
    help=f"After a job's timeout, how long it may take to stop; then the worker records its "
    f"failure and ends itself with exit status {WATCHDOG_EXIT_STATUS}. [default: {DEFAULT_GRACE_SECONDS:g}s]",
)
@click.option(
    "--wait", type=DURATION, default=0, help="On an empty queue, keep polling this long before exiting."
)
@click.option(
    "--poll-interval",
    type=DURATION,
    default=1.0,
    show_default=True,
    help="How often an idle worker looks for new jobs while waiting.",
)
@click.option("--handler", metavar="PATH", help="Call this for every job (pkg.mod:func), whatever its task.")
@click.option(
    "--middleware",
    multiple=True,
    envvar=MIDDLEWARE_ENV,
    show_envvar=True,
    metavar="PATH",
    help="Run this middleware around each job (pkg.mod:name, a (call, call_next) callable or a "
    "class made with no arguments; e.g. batchq.contrib.otel:JobSpans); repeat for several, "
    "outermost first. The environment variable takes paths separated by commas.",
)
@click.option(
    "--max-procs-per-host",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="At most this many `batchq run` per host and database; the rest exit quietly.",
)
@click.option(
    "--task-modules",
    envvar=TASK_MODULES_ENV,
    show_envvar=True,
    metavar="M1,M2",
    help="Modules whose functions jobs may call, by exact name; 'pkg.*' for every submodule of pkg.",
)
@click.option(
    "--batch",
    type=click.IntRange(1, 1000),
    default=1,
    show_default=True,
    help="Claim up to this many jobs per transaction and delete the successes together. "
    "Faster; but a crash can re-run every job of the batch, finished or not.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, MAX_CONCURRENCY),
    default=1,
    show_default=True,
    help="Run up to this many jobs at once, each in a thread of its own with its own database "
    "connection (N + 1 in all): for jobs that wait on I/O. Not with --claim partition.",
)
@click.option(
    "--backoff",
    type=DURATION,
    default=BACKOFF_BASE_SECONDS,
    show_default=True,
    help="Retry delay after a first failure; doubles with each further failure, up to 1h.",
)
@click.option(
    "--heartbeat",
    type=DURATION,
    default=DEFAULT_HEARTBEAT_SECONDS,
    show_default=True,
    help="While a job runs, ping the worker's database session this often, so no idle "
    "timeout cuts it (0: never).",
)
@click.option(
    "--claim",
    type=click.Choice(["row", "partition"]),
    default="row",
    show_default=True,
    help="row: claim any due job (SKIP LOCKED where the server has it). partition: lease one "
    "partition at a time and claim only its jobs, so workers stop contending where row claims "
    "do (no SKIP LOCKED, clusters); needs `batchq partitions set N` once.",
)
@click.option(
    "--jobs-per-lease",
    type=click.IntRange(min=1),
    default=DEFAULT_JOBS_PER_LEASE,
    show_default=True,
    help="With --claim partition: claim this many jobs from a partition, then lease another.",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Keep every finished job in the history (`batchq history`), whatever its queue's keep_for.",
)
@click.option(
    "--tick",
    "tick_first",
    is_flag=True,
    help="Run `batchq tick` first: one crontab line schedules and drains.",
)
@click.pass_context
def run(
    ctx: click.Context,
    queues: tuple[str, ...],
    max_jobs: int | None,
    max_seconds: float | None,
    timeout: float | None,
    timeout_grace: float | None,
    wait: float,
    poll_interval: float,
    handler: str | None,
    middleware: tuple[str, ...],
    max_procs_per_host: int,
    task_modules: str | None,
    backoff: float,
    batch: int,
    concurrency: int,
    heartbeat: float,
    claim: str,
    jobs_per_lease: int,
    keep: bool,
    tick_first: bool,
) -> None:
    """Process jobs until the queue is empty or a limit is reached.

    SIGTERM finishes the job at hand, then exits 0. A job that would not stop within its
    timeout's grace period ends the process with exit status 4.
    """
    if any("*" in name for name in queues):
        usage_error(
            "--queue takes a queue's name, not a pattern: repeat it for each queue to serve "
            "(--queue default --queue mail); `batchq stats` lists the queues"
        )
    queue = open_queue(ctx, task_modules)
    options = RunOptions(
        queues=tuple(check_queue_name(q) for q in queues),
        max_jobs=max_jobs,
        max_seconds=max_seconds,
        timeout=timeout,
        timeout_grace=DEFAULT_GRACE_SECONDS if timeout_grace is None else timeout_grace,
        wait=wait,
        poll_interval=max(poll_interval, 0.001),
        handler=_allowed_handler(queue, handler) if handler else None,
        backoff_base=backoff,
        batch_size=batch,
        concurrency=concurrency,
        heartbeat=heartbeat,
        claim=claim,
        jobs_per_lease=jobs_per_lease,
        keep=keep,
    )
    check_concurrency(options)  # before --tick writes anything
    layers = [load_middleware(path) for path in middleware_paths(middleware)]  # before any job
    if tick_first:
        from .schedules import tick_once  # croniter: loaded only when run ticks schedules first

        tick_once(queue)  # a schedule that fails is logged; the jobs of the others are drained
    with host_slot(queue.url, max_procs_per_host) as slot:
        if slot is None:
            return  # enough workers on this host already
        summary = Worker(queue, options, middleware=layers).run()
    logging.getLogger("batchq").info(
        "processed %s (%d ok, %s%s%s), %d put back for a newer task version; %s retried, %s, %s",
        n_jobs(summary.processed),
        summary.succeeded,
        counted(summary.errors, "error"),
        f", {summary.snoozed} snoozed" if summary.snoozed else "",  # only where a task snoozes
        f", {summary.held} held by their key's rate" if summary.held else "",
        summary.version_waits,
        counted(queue.backend.transient_retries, "lock conflict"),
        counted(summary.reconnects, "reconnect"),
        counted(summary.stale_finishes, "stale finish", "stale finishes"),
    )
    if summary.processed == 0 and logging.getLogger("batchq").isEnabledFor(logging.INFO):
        _hint_other_queues(queue, options.queues)


def _hint_other_queues(queue: Queue, served: tuple[str, ...]) -> None:
    """-v, when run found nothing: name the queues it does not serve that have due jobs, and how
    to serve them (a plain run stays quiet: with a worker per queue in cron, all is well)."""
    waiting = [
        (s.queue, s.ready) for s in queue.stats() if s.ready and not s.paused and s.queue not in served
    ]
    if not waiting:
        return
    shown = ", ".join(f"{name} ({n_jobs(ready)})" for name, ready in waiting[:5])
    more = f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
    names = " ".join(f"--queue {name}" for name, _ in waiting[:2])
    logging.getLogger("batchq").info(
        "this run serves %s; jobs are due in other queues: %s%s. Serve them with %s (repeat "
        "--queue for each queue a worker should take jobs from)",
        ", ".join(served),
        shown,
        more,
        names,
    )


def _allowed_handler(queue: Queue, path: str) -> Callable[..., Any]:
    """--handler is resolved as a job's task is, under BATCHQ_TASK_MODULES (as `batchq consume`
    checks its handlers): a typo or a pasted crontab line must not run os:system with payloads."""
    try:
        return queue.resolver.resolve(path)
    except TaskError as exc:
        raise TaskError(f"--handler {path!r} refused: {exc}") from None


@click.command()
@common_options
@click.argument("task")
@click.argument("payload", required=False)
@click.option("--queue", default="default", show_default=True)
@click.option("--delay", type=DURATION, help="Due after this long (default: now).")
@click.option("--priority", type=int, default=0, show_default=True, help="Higher runs first.")
@click.option("--max-errors", type=int, help="Tries before it fails for good (default: the task's, else 10).")
@click.option("--concurrency-key", metavar="KEY", help="Run at most --concurrency-limit jobs of KEY at once.")
@click.option("--concurrency-limit", type=int, metavar="N", help="With --concurrency-key (default 1).")
@click.option("--rate-key", metavar="KEY", help="Start at most --rate jobs of KEY per period (all workers).")
@click.option("--rate", metavar="N/PERIOD", help="With --rate-key: e.g. 100/m (s, m, h, d or a duration).")
@click.option(
    "--unique-key",
    metavar="KEY",
    help="While a job of KEY waits or runs, write nothing and print that job's id (a note on stderr).",
)
@click.option(
    "--timeout",
    metavar="DURATION",
    callback=timeout_value,
    help="Stop the job if it runs longer (default: the task's, else `batchq run --timeout`).",
)
@click.option(
    "--backoff",
    type=DURATION,
    help="Retry delay after a first failure, doubling up to 1h (default: the task's, else run's).",
)
@click.option(
    "--keep-result",
    type=DURATION,
    metavar="DURATION",
    help="Keep the job's outcome this long, for `batchq result ID` (default: the task's, else not).",
)
@click.option(
    "--run-at",
    metavar="TIME",
    callback=when_value,
    help="Due at this ISO 8601 time with its offset (2026-11-27T12:00:00+00:00); not with --delay.",
)
@click.option(
    "--expires",
    metavar="DURATION|TIME",
    callback=duration_or_when_value,
    help="Never start the job after this (a duration from now, or an ISO 8601 time): failed as expired.",
)
@click.option(
    "--after",
    metavar="ID",
    type=int,
    multiple=True,
    help="Wait until job ID has succeeded (repeat for several parents); see docs/guides/dependencies.md.",
)
@click.option("--task-modules", envvar=TASK_MODULES_ENV, show_envvar=True, metavar="M1,M2")
@click.pass_context
def enqueue(
    ctx: click.Context,
    task: str,
    payload: str | None,
    queue: str,
    delay: float | None,
    priority: int,
    max_errors: int | None,
    concurrency_key: str | None,
    concurrency_limit: int | None,
    rate_key: str | None,
    rate: str | None,
    unique_key: str | None,
    timeout: float | None,
    backoff: float | None,
    keep_result: float | None,
    run_at: datetime | None,
    expires: float | datetime | None,
    after: tuple[int, ...],
    task_modules: str | None,
) -> None:
    """Enqueue TASK with a JSON PAYLOAD; prints the job id."""
    try:
        data = json.loads(payload) if payload is not None else None
    except ValueError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="PAYLOAD") from None
    except RecursionError:
        raise click.BadParameter("JSON nested too deeply", param_hint="PAYLOAD") from None
    job_id = open_queue(ctx, task_modules).enqueue(
        task,
        data,
        queue=queue,
        delay=delay,
        priority=priority,
        max_errors=max_errors,
        concurrency_key=concurrency_key,
        concurrency_limit=concurrency_limit,
        unique_key=unique_key,
        timeout=timeout,
        backoff=backoff,
        keep_result=keep_result,
        run_at=run_at,
        expires=expires,
        after=list(after) if after else None,
        rate_key=rate_key,
        rate=rate,
    )
    click.echo(job_id)
    if not job_id.created:
        click.echo(f"batchq: job {job_id} holds unique key {unique_key!r}: nothing enqueued", err=True)


@click.command()
@common_options
@click.argument("job_id", metavar="ID", type=int, required=False)
@click.option("--queue", "queue_name", metavar="Q", help="Cancel every waiting job of this queue.")
@click.option("--task", metavar="TASK", help="With --queue: only jobs of this task.")
@click.option(
    "--older-than", type=DURATION, default=0, help="With --queue: only jobs enqueued that long ago."
)
@click.pass_context
def cancel(
    ctx: click.Context, job_id: int | None, queue_name: str | None, task: str | None, older_than: float
) -> None:
    """Delete a job nobody is running (exit 1, saying why, if it is being run or there is no such
    job); or, with --queue, every waiting job that matches (never a running or failed one),
    printing how many."""
    if job_id is not None:
        if queue_name or task or older_than:
            usage_error("give a job id, or --queue with its filters, not both")
        queue = open_queue(ctx)
        if not queue.cancel(job_id):
            fail(f"job {job_id} was not cancelled: {_why_not_cancelled(queue, job_id)}")
        return
    if queue_name is None:
        usage_error("give a job id, or --queue Q (with --task, --older-than) to cancel by filter")
    cancelled = open_queue(ctx).cancel_where(queue_name, task=task, older_than=older_than)
    click.echo(f"{n_jobs(cancelled)} cancelled")


def _why_not_cancelled(queue: Queue, job_id: int) -> str:
    found = queue.explain(job_id)
    see = f" (see `batchq explain {job_id}`)" if found.exists else ""
    return why_not_cancelled(found) + see
