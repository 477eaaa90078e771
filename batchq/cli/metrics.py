"""`batchq metrics`: the queues in the Prometheus text format, printed or written for node_exporter."""

from __future__ import annotations

from pathlib import Path

import click

from ..ops.metrics import DEFAULT_HISTORY_WINDOW_SECONDS, render, write_textfile
from .common import DURATION, common_options, fail, open_queue, usage_error


def _textfile(value: str | None) -> Path | None:
    """--textfile '' is refused before anything is read or written (as a path it would be the
    current folder, and the rename over it fails with "Device or resource busy")."""
    if value is None:
        return None
    if not value.strip():
        usage_error(
            "--textfile is empty: give the file to write, such as "
            "/var/lib/node_exporter/textfile_collector/batchq.prom"
        )
    return Path(value)


@click.command()
@common_options
@click.option(
    "--textfile",
    type=click.Path(dir_okay=False),
    callback=lambda ctx, param, value: _textfile(value),
    metavar="PATH",
    help="Write to PATH atomically (a temporary file in its folder, renamed over it) instead of "
    "printing: for node_exporter's textfile collector, whose files end in .prom.",
)
@click.option(
    "--history-window",
    type=DURATION,
    default=DEFAULT_HISTORY_WINDOW_SECONDS,
    show_default="5m",
    help="Count the jobs kept in history that finished within this long (batchq_finished_jobs).",
)
@click.pass_context
def metrics(ctx: click.Context, textfile: Path | None, history_window: float) -> None:
    """Per queue: jobs ready, delayed, blocked, processing and failed, whether it is paused, the age of
    its oldest due job and of its oldest claim; the locks held; and where history is kept, the
    jobs done and failed per task in the last --history-window, with their wall and CPU times.
    Prometheus text format."""
    queue = open_queue(ctx)
    if textfile is None:
        click.echo(render(queue.backend, history_window).decode(), nl=False)
        return
    try:
        write_textfile(queue.backend, textfile, history_window)
    except OSError as exc:
        fail(f"cannot write {textfile}: {exc.strerror or exc}")
