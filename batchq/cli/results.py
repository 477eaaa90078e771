"""`batchq result ID`: a job's outcome, for scripts: its return value as JSON, or why there is none."""

from __future__ import annotations

import json

import click

from ..jobs.results import JobResult
from .common import DURATION, common_options, fail, open_queue, print_json


@click.command()
@common_options
@click.argument("job_id", metavar="ID", type=int)
@click.option(
    "--wait",
    type=DURATION,
    default=None,
    metavar="SECONDS",
    help="Wait up to this long (30, 90s, 5m) for the job to end.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print every field (status, value, error, times) as JSON.",
)
@click.pass_context
def result(ctx: click.Context, job_id: int, wait: float | None, as_json: bool) -> None:
    """What job ID returned, printed as JSON (exit 0), once it succeeded; else exit 1 with one
    line saying why not: it failed (its exception and message), was cancelled, is still waiting
    or running (after --wait, if given), or is unknown (no such job, its result was not kept, or
    it expired). Jobs keep a result only when asked (enqueue(keep_result=...), @task, a queue's
    keep_for): see docs/results.md.
    """
    found = open_queue(ctx).result(job_id, wait=wait)
    if as_json:
        print_json(found.as_dict())
    elif found.status == "succeeded":
        click.echo(json.dumps(found.value, ensure_ascii=False))
    if found.status != "succeeded":
        fail(_why_not(found, wait))


def _why_not(found: JobResult, wait: float | None) -> str:
    waited = "" if not wait else f" after waiting {wait:g}s"
    if found.status == "failed":
        error = found.error
        what = "" if error is None else f": {error.exception_class or 'error'}: {error.message}"
        tries = "1 try" if found.attempts == 1 else f"{found.attempts} tries"
        return f"job {found.id} failed after {tries}{what}"
    if found.status == "cancelled":
        return f"job {found.id} was cancelled before it ran"
    if found.status in ("waiting", "running"):
        return f"job {found.id} is still {found.status}{waited}: try again later, or give --wait SECONDS"
    return (
        f"no result for job {found.id}: no such job, or it ended without keeping its result, or "
        "the result expired (keep one with enqueue(keep_result=True) or @task(keep_result=...))"
    )
