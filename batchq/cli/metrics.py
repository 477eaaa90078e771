"""`batchq metrics`: the queues in the Prometheus text format, printed or written for node_exporter."""

from __future__ import annotations

from pathlib import Path

import click

from ..metrics import render, write_textfile
from .common import common_options, open_queue


@click.command()
@common_options
@click.option(
    "--textfile",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PATH",
    help="Write to PATH atomically (a temporary file in its folder, renamed over it) instead of "
    "printing: for node_exporter's textfile collector, whose files end in .prom.",
)
@click.pass_context
def metrics(ctx: click.Context, textfile: Path | None) -> None:
    """Per queue: jobs ready, delayed, processing and failed, whether it is paused, the age of
    its oldest due job and of its oldest claim; and the locks held. Prometheus text format."""
    queue = open_queue(ctx)
    if textfile is None:
        click.echo(render(queue.backend).decode(), nl=False)
        return
    try:
        write_textfile(queue.backend, textfile)
    except OSError as exc:
        click.echo(f"batchq: error: cannot write {textfile}: {exc.strerror or exc}", err=True)
        ctx.exit(1)
