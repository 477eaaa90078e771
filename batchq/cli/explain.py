"""`batchq explain ID`: why a job is or is not running, in plain words."""

from __future__ import annotations

from dataclasses import asdict

import click

from .common import common_options, fail, open_queue, print_json


@click.command()
@common_options
@click.argument("job_id", metavar="ID", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON.")
@click.pass_context
def explain(ctx: click.Context, job_id: int, as_json: bool) -> None:
    """Why job ID is or is not running: waiting (and how many jobs are ahead of it), delayed
    (until when, and why), its queue paused, running (on which worker, since when, and whether
    that worker is alive), or failed (after how many tries, with the last error).

    Reads only, and takes no lock a worker could wait on. Exit 1 when no job has that id (it
    may have finished: batchq deletes finished jobs).
    """
    found = open_queue(ctx).explain(job_id)
    if as_json:
        print_json({**asdict(found), "exists": found.exists})
    elif found.exists:
        click.echo(_shown(found.summary))
        for line in (*found.details, *found.notes):
            click.echo("  " + _shown(line))
    if not found.exists:
        fail(found.summary)


def _shown(line: str) -> str:
    """One printable line: a row written by hand may hold control characters anywhere."""
    return "".join(ch if ch.isprintable() or ch == "\t" else repr(ch)[1:-1] for ch in line)
