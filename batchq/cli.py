"""The `batchq` command. Quiet when all is well: cron mails whatever it prints.

Exit statuses: 0 all well; 1 an error (bad URL, unreachable database, missing
schema); 2 a usage error; 3 a sweep found something a human should look at.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, NoReturn

import click

from . import gc
from .config import URL_ENV, parse_duration
from .errors import BatchqError
from .heartbeat import DEFAULT_HEARTBEAT_SECONDS
from .queue import Queue
from .slots import host_slot
from .tasks import TASK_MODULES_ENV, load_trusted
from .worker import BACKOFF_BASE_SECONDS, RunOptions, Worker

EXIT_FOUND = 3


class BatchqGroup(click.Group):
    """Turns batchq's own errors into one line on stderr and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BatchqError as exc:
            click.echo(f"batchq: error: {exc}", err=True)
            ctx.exit(1)


class Duration(click.ParamType):
    name = "DURATION"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        try:
            return parse_duration(value)
        except BatchqError as exc:
            self.fail(str(exc), param, ctx)


DURATION = Duration()


URL_HELP = (
    "Database URL: sqlite:///file.db, mysql://user:pass@host/db, "
    "postgresql://user:pass@host/db. Default: a SQLite file under "
    "~/.local/share/batchq. Prefer the environment variable: it keeps the "
    "password out of the process list."
)
VERBOSE_HELP = "Log failures and a summary (-v), and each job (-vv), to stderr."


def _set_verbosity(verbose: int) -> None:
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.basicConfig(format="batchq: %(message)s", stream=sys.stderr)
    logging.getLogger().setLevel(level)


def _subcommand_url(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.ensure_object(dict)["url"] = value  # the subcommand's --url wins over the group's


def _subcommand_verbose(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value:
        _set_verbosity(value)  # the subcommand's -v wins over the group's


_url_after = click.option("--url", metavar="URL", expose_value=False, callback=_subcommand_url, help=URL_HELP)
_verbose_after = click.option(
    "-v", "--verbose", count=True, expose_value=False, callback=_subcommand_verbose, help=VERBOSE_HELP
)


def common_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--url and -v after the subcommand too (`batchq run -v --url ...`), as rq takes them."""
    return _url_after(_verbose_after(command))


@click.group(cls=BatchqGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar=URL_ENV, show_envvar=True, metavar="URL", help=URL_HELP)
@click.option("-v", "--verbose", count=True, help=VERBOSE_HELP)
@click.version_option(package_name="batchq")
@click.pass_context
def cli(ctx: click.Context, url: str | None, verbose: int) -> None:
    """batchq: a job queue in the database you already run."""
    _set_verbosity(verbose)
    ctx.obj = {"url": url}


def _queue(ctx: click.Context, task_modules: str | None = None) -> Queue:
    queue = Queue(ctx.obj["url"], task_modules=task_modules)
    ctx.call_on_close(queue.close)
    return queue


@cli.command("init-db")
@common_options
@click.pass_context
def init_db(ctx: click.Context) -> None:
    """Create the tables, or migrate them to this version (idempotent, quiet)."""
    applied = _queue(ctx).init_db()
    for name in applied:
        logging.getLogger("batchq").info("applied migration %s", name)


@cli.command()
@common_options
@click.option(
    "--queue",
    "queues",
    multiple=True,
    metavar="Q",
    default=("default",),
    show_default=True,
    help="Queue to work on; repeat for several, tried in order.",
)
@click.option("--max-jobs", type=click.IntRange(min=1), help="Exit after this many jobs.")
@click.option("--max-seconds", type=DURATION, help="Exit after this long (checked between jobs).")
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
@click.pass_context
def run(
    ctx: click.Context,
    queues: tuple[str, ...],
    max_jobs: int | None,
    max_seconds: float | None,
    wait: float,
    poll_interval: float,
    handler: str | None,
    max_procs_per_host: int,
    task_modules: str | None,
    backoff: float,
    batch: int,
    heartbeat: float,
) -> None:
    """Process jobs until the queue is empty or a limit is reached.

    SIGTERM finishes the job at hand, then exits 0.
    """
    queue = _queue(ctx, task_modules)
    from .config import check_queue_name

    options = RunOptions(
        queues=tuple(check_queue_name(q) for q in queues),
        max_jobs=max_jobs,
        max_seconds=max_seconds,
        wait=wait,
        poll_interval=max(poll_interval, 0.001),
        handler=load_trusted(handler) if handler else None,
        backoff_base=backoff,
        batch_size=batch,
        heartbeat=heartbeat,
    )
    with host_slot(queue.url, max_procs_per_host) as slot:
        if slot is None:
            return  # enough workers on this host already
        summary = Worker(queue, options).run()
    logging.getLogger("batchq").info(
        "processed %d jobs (%d ok, %d errors); %d lock conflicts retried, %d reconnects, %d stale finishes",
        summary.processed,
        summary.succeeded,
        summary.errors,
        queue.backend.transient_retries,
        summary.reconnects,
        summary.stale_finishes,
    )


@cli.command("gc-processing")
@common_options
@click.option(
    "--older-than",
    type=DURATION,
    default=gc.DEFAULT_OLDER_THAN_SECONDS,
    show_default="1h",
    help="Report jobs of live workers running longer than this.",
)
@click.option(
    "--ghost-after",
    type=DURATION,
    default=None,
    help="Also take a worker for gone when the database session holding its lock has sat idle "
    "this long (a ghost left by a dropped connection); well above every worker's --heartbeat. "
    "Default: off.",
)
@click.option("--hook", metavar="PATH", help="Call pkg.mod:func with the affected jobs (a list of dicts).")
@click.option("--json", "as_json", is_flag=True, help="Print the affected jobs as JSON.")
@click.pass_context
def gc_processing(
    ctx: click.Context, older_than: float, ghost_after: float | None, hook: str | None, as_json: bool
) -> None:
    """Put back jobs of dead workers at once; report long runners of live ones.

    Quiet and exit 0 when nothing is stuck; a report and exit 3 otherwise.
    """
    hook_fn = load_trusted(hook) if hook else None
    report = gc.gc_processing(_queue(ctx), older_than, ghost_after)
    jobs = (
        [dict(job, state="requeued") for job in report.requeued]
        + [dict(job, state="long_running") for job in report.long_running]
        + [dict(job, state="unhandled") for job in report.unhandled]
        + [dict(job, state="unrunnable") for job in report.unrunnable]
    )
    _report_found(jobs, hook_fn, as_json, lambda: _processing_report(report, older_than))


@cli.command("gc-error")
@common_options
@click.option("--queue", "queues", multiple=True, metavar="Q", help="Only this queue (repeatable).")
@click.option("--id", "ids", multiple=True, type=int, metavar="ID", help="Only this job (repeatable).")
@click.option("--requeue", is_flag=True, help="Give the failed jobs a fresh set of tries, due now.")
@click.option("--delete", is_flag=True, help="Delete the failed jobs.")
@click.option("--hook", metavar="PATH", help="Call pkg.mod:func with the affected jobs (a list of dicts).")
@click.option("--json", "as_json", is_flag=True, help="Print the affected jobs as JSON.")
@click.pass_context
def gc_error(
    ctx: click.Context,
    queues: tuple[str, ...],
    ids: tuple[int, ...],
    requeue: bool,
    delete: bool,
    hook: str | None,
    as_json: bool,
) -> None:
    """List jobs that failed max_errors times; --requeue or --delete them.

    Quiet and exit 0 when there are none; a report and exit 3 otherwise.
    """
    if requeue and delete:
        raise click.UsageError("--requeue and --delete cannot be used together")
    action = "requeue" if requeue else "delete" if delete else None
    hook_fn = load_trusted(hook) if hook else None
    jobs = gc.gc_error(_queue(ctx), action, queues, ids)
    _report_found(jobs, hook_fn, as_json, lambda: _failed_report(jobs, action))


@cli.command()
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Per-queue counts: ready, delayed, processing (and the oldest's age), failed."""
    queue = _queue(ctx)
    rows = queue.stats()
    if as_json:
        _print_json({"backend": queue.backend.describe(), "queues": [asdict(r) for r in rows]})
        return
    click.echo(queue.backend.describe())
    header = f"{'queue':<20} {'ready':>8} {'delayed':>8} {'processing':>10} {'oldest':>8} {'failed':>8}"
    click.echo(header)
    for r in rows:
        oldest = _age(r.oldest_processing_seconds) if r.oldest_processing_seconds is not None else "-"
        name = r.queue + (" (paused)" if r.paused else "")
        click.echo(f"{name:<20} {r.ready:>8} {r.delayed:>8} {r.processing:>10} {oldest:>8} {r.failed:>8}")


@cli.command()
@common_options
@click.argument("task")
@click.argument("payload", required=False)
@click.option("--queue", default="default", show_default=True)
@click.option("--delay", type=DURATION, default=0)
@click.option("--priority", type=int, default=0, show_default=True, help="Higher runs first.")
@click.option("--max-errors", type=int, default=10, show_default=True)
@click.option("--task-modules", envvar=TASK_MODULES_ENV, show_envvar=True, metavar="M1,M2")
@click.pass_context
def enqueue(
    ctx: click.Context,
    task: str,
    payload: str | None,
    queue: str,
    delay: float,
    priority: int,
    max_errors: int,
    task_modules: str | None,
) -> None:
    """Enqueue TASK with a JSON PAYLOAD; prints the job id."""
    try:
        data = json.loads(payload) if payload is not None else None
    except ValueError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="PAYLOAD") from None
    except RecursionError:
        raise click.BadParameter("JSON nested too deeply", param_hint="PAYLOAD") from None
    job_id = _queue(ctx, task_modules).enqueue(
        task, data, queue=queue, delay=delay, priority=priority, max_errors=max_errors
    )
    click.echo(job_id)


@cli.command()
@common_options
@click.argument("job_id", type=int)
@click.pass_context
def cancel(ctx: click.Context, job_id: int) -> None:
    """Delete a job nobody is running; exit 1 if it is being run or gone."""
    if not _queue(ctx).cancel(job_id):
        click.echo(f"batchq: job {job_id} was not cancelled: it is being run, or no longer exists", err=True)
        _exit(1)


@cli.command()
@common_options
@click.argument("queue_name")
@click.pass_context
def pause(ctx: click.Context, queue_name: str) -> None:
    """Stop workers claiming from a queue (enqueue goes on)."""
    _queue(ctx).pause(queue_name)


@cli.command()
@common_options
@click.argument("queue_name")
@click.pass_context
def resume(ctx: click.Context, queue_name: str) -> None:
    """Let workers claim from a paused queue again."""
    _queue(ctx).resume(queue_name)


@cli.command()
@common_options
@click.argument("queue_name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def purge(ctx: click.Context, queue_name: str, yes: bool) -> None:
    """Delete a queue's ready and failed jobs (jobs being run are left alone)."""
    if not yes and not sys.stdin.isatty():
        click.echo(
            "batchq: error: purge asks for confirmation: add --yes when there is no terminal", err=True
        )
        _exit(2)
    if not yes:
        click.confirm(f"Delete every ready and failed job of queue {queue_name!r}?", abort=True)
    click.echo(f"deleted {_queue(ctx).purge(queue_name)} jobs")


# -- output -------------------------------------------------------------------------


def _processing_report(report: gc.ProcessingReport, older_than: float) -> str:
    parts = []
    if report.requeued:
        parts.append(f"{_jobs(len(report.requeued))} of dead workers put back")
    if report.long_running:
        parts.append(f"{_jobs(len(report.long_running))} running longer than {_age(older_than)}")
    if report.unhandled:
        parts.append(f"{_jobs(len(report.unhandled))} that could not be put back")
    if report.unrunnable:
        parts.append(f"{_jobs(len(report.unrunnable))} no worker will claim")
    lines = ["batchq gc-processing: " + ", ".join(parts)]
    for job in report.requeued:
        outcome = "failed (out of tries)" if job.get("failed") else "put back"
        no_token = "; it had no claim token" if job["claim_token"] is None else ""
        lines.append(
            f"  {outcome:<22}#{job['id']} {job['queue']} {job['task']}: worker "
            f"{_owner(job)} is gone (ran {_age(job['age_seconds'])}){no_token}"
        )
    for job in report.long_running:
        lines.append(
            f"  {'still running':<22}#{job['id']} {job['queue']} {job['task']}: worker "
            f"{_owner(job)} {'is alive' if job['worker_alive'] else 'cannot be checked'},"
            f" running for {_age(job['age_seconds'])}"
        )
    for job in report.unhandled:
        lines.append(
            f"  {'not put back':<22}#{job['id']} {job['queue']} {job['task']}: worker "
            f"{_owner(job)} is gone; {job['error']}"
        )
    for job in report.unrunnable:
        lines.append(
            f"  {'never claimed':<22}#{job['id']} {job['queue']} {job['task']}: status "
            f"{job['status']!r}, priority {job['priority']!r} (fix or delete the row)"
        )
    return "\n".join(lines)


def _owner(job: dict[str, Any]) -> str:
    return job["locked_by"] or "(none recorded)"


def _failed_report(jobs: list[dict[str, Any]], action: str | None) -> str:
    verb = {"requeue": "requeued", "delete": "deleted", None: "out of tries"}[action]
    lines = [f"batchq gc-error: {_jobs(len(jobs))} {verb}"]
    for job in jobs:
        first_line = (job["last_error"] or "").splitlines()[:1] or [""]
        errors = (
            f"{job['error_count_before']} errors, reset to 0"
            if "error_count_before" in job
            else f"{job['error_count']} errors"
        )
        lines.append(f"  #{job['id']} {job['queue']} {job['task']} ({errors}): {first_line[0][:200]}")
    if action is None:
        lines.append("Retry them with `batchq gc-error --requeue`, or drop them with `--delete`.")
    return "\n".join(lines)


def _jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n} jobs"


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "an unknown time"  # processing_at NULL or infinite: a row written by hand
    seconds = int(float(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def _report_found(
    jobs: list[dict[str, Any]],
    hook: Callable[..., Any] | None,
    as_json: bool,
    text: Callable[[], str],
) -> None:
    """A sweep's ending: quiet and exit 0 when it found nothing; else report, hook, exit 3.

    The sweep's action has committed by now, so the report prints first; a hook that fails
    adds one line to stderr and the status stays 3.
    """
    if not jobs:
        return
    if as_json:
        _print_json(jobs)
    else:
        click.echo(text())
    if hook is not None:
        _call_hook(hook, [{k: v for k, v in job.items() if k != "claim_token"} for job in jobs])
    _exit(EXIT_FOUND)


def _call_hook(hook: Callable[..., Any], jobs: list[dict[str, Any]]) -> None:
    try:
        hook(jobs)
    except (Exception, SystemExit) as exc:
        name = f"{getattr(hook, '__module__', '?')}:{getattr(hook, '__qualname__', repr(hook))}"
        click.echo(f"batchq: error: hook {name} failed: {_one_line(exc)}", err=True)


def _one_line(exc: BaseException) -> str:
    """An exception as one short line, even when its message has several or its __str__ fails."""
    try:
        text = str(exc)
    except Exception:
        text = ""
    first = text.strip().splitlines()[:1]
    return f"{type(exc).__name__}: {first[0][:300]}" if first else type(exc).__name__


def _exit(code: int) -> NoReturn:
    raise click.exceptions.Exit(code)


def main() -> None:
    cli(prog_name="batchq")
