"""`batchq configure QUEUE` (a job queue) and what `batchq mq configure QUEUE` shares with it: show
every setting of a queue, and set the bound, the type and the retention, each through the one
API that owns it (Queue.configure, alter_queue; pause and resume stay their own commands)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..core.config import check_queue_name, counted, format_duration
from ..errors import ConfigError
from ..policy.flow import RATE_HELP, check_max_running, parse_rate
from ..policy.settings import JobQueueSettings
from .common import common_options, open_queue, print_json, printable

OFF = "off"

max_length_option = click.option(
    "--max-length",
    metavar="N|off",
    help="Bound the queue to N waiting jobs (messages, for a message queue); 'off' lifts the bound.",
)
overflow_option = click.option(
    "--overflow",
    type=click.Choice(["drop_oldest", "reject"]),
    help="What a send to a full queue does (with --max-length; default: the queue's own, else drop_oldest).",
)
schema_option = click.option(
    "--schema",
    metavar="FILE|-|off",
    help="Type the queue's payloads with the JSON Schema in FILE ('-': standard input); 'off' "
    "makes it untyped. Refused while a waiting payload does not match, unless --force.",
)
force_option = click.option(
    "--force", is_flag=True, help="With --schema: change the type even if waiting payloads do not match it."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print the settings as JSON.")


def parse_rate_option(text: str) -> str | None:
    """--rate as Queue.configure takes it, checked before anything is written; 'off': None."""
    if text.strip().lower() == OFF:
        return None
    parse_rate(text)
    return text


def parse_max_running(text: str) -> int | None:
    """--max-running as a whole number from 1, checked before anything is written; 'off': None."""
    if text.strip().lower() == OFF:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(
            f"bad --max-running {text!r}: use a whole number from 1 (to stop the queue, `batchq pause` it), "
            "or 'off' (no limit)"
        )
    return check_max_running(value)


def parse_max_length(text: str) -> int | None:
    if text.strip().lower() == OFF:
        return None
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"bad --max-length {text!r}: use a whole number, or 'off' (no bound)") from None


def read_schema(source: str) -> dict[str, Any] | None:
    """The JSON Schema a --schema names: a file, '-' for standard input, 'off' for none."""
    if source.strip().lower() == OFF:
        return None
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read --schema {source}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"--schema {source} is not JSON ({exc}): give a JSON Schema object") from None
    if not isinstance(schema, dict):
        raise ConfigError(f"--schema {source} holds no JSON object: give a JSON Schema object")
    return schema


def check_bound_options(max_length: str | None, overflow: str | None) -> int | None | object:
    """--max-length as a bound, checked before anything is written; NOT_GIVEN when absent."""
    if max_length is None:
        if overflow is not None:
            raise ConfigError("--overflow needs --max-length: give the bound the policy is for")
        return NOT_GIVEN
    bound = parse_max_length(max_length)
    if bound is None and overflow is not None:
        raise ConfigError("--overflow goes with a bound: drop it, or give --max-length N")
    return bound


NOT_GIVEN = object()


def kept_overflow(bound: Any, given: str | None, current: str | None) -> str | None:
    """The policy to store with a new bound: the one given, else the queue's own (a new
    --max-length alone keeps a reject queue rejecting), else the default."""
    if bound is None:
        return None
    return given or current


def describe_type(name: str | None) -> str:
    return "none (untyped)" if name is None else printable(name)


def print_settings(title: str, lines: list[tuple[str, str]]) -> None:
    click.echo(title)
    for key, value in lines:
        click.echo(f"  {key:<12} {value}")


@click.command()
@common_options
@click.argument("queue_name", metavar="QUEUE")
@click.option(
    "--keep-for",
    metavar="DURATION|off",
    help="Keep the queue's finished jobs in the history this long (e.g. 7d); 'off' stops keeping them.",
)
@max_length_option
@overflow_option
@schema_option
@force_option
@click.option(
    "--rate",
    metavar="N/PERIOD|off",
    help=f"Rate-limit the queue, across every worker: {RATE_HELP}; 'off' lifts the limit.",
)
@click.option(
    "--max-running",
    metavar="N|off",
    help="Run at most N of the queue's jobs at once, across every worker; 'off' lifts the limit.",
)
@json_option
@click.pass_context
def configure(
    ctx: click.Context,
    queue_name: str,
    keep_for: str | None,
    max_length: str | None,
    overflow: str | None,
    schema: str | None,
    force: bool,
    rate: str | None,
    max_running: str | None,
    as_json: bool,
) -> None:
    """Show a job queue's settings (paused, keep_for, max_length and overflow, type, rate,
    max_running), or set those given: quietly, but for what a change did to waiting jobs (--json
    prints the settings after). Pause and resume with `batchq pause` / `resume`; a message
    queue's settings with `batchq mq configure`."""
    check_queue_name(queue_name)  # printing too: '' or a typo is no queue, not one with defaults
    bound = check_bound_options(max_length, overflow)
    new_rate = NOT_GIVEN if rate is None else parse_rate_option(rate)
    new_running = NOT_GIVEN if max_running is None else parse_max_running(max_running)
    new_schema = read_schema(schema) if schema is not None else None
    if force and schema is None:
        raise ConfigError("--force goes with --schema: it changes a type despite waiting jobs")
    queue = open_queue(ctx)
    changes: dict[str, Any] = {}
    if keep_for is not None:
        changes["keep_for"] = None if keep_for.strip().lower() == OFF else keep_for
    if bound is not NOT_GIVEN:
        changes["max_length"] = bound
        before = queue.backend.stores.settings.job_queues(queue_name).get(queue_name)
        changes["overflow"] = kept_overflow(bound, overflow, before.overflow if before else None)
    if new_rate is not NOT_GIVEN:
        changes["rate"] = new_rate
    if new_running is not NOT_GIVEN:
        changes["max_running"] = new_running
    notes = []
    if changes:
        dropped = queue.configure(queue_name, **changes)
        if dropped:
            notes.append(f"{counted(dropped, 'waiting job')} failed to fit the new bound (drop_oldest)")
    if schema is not None:
        mismatched = queue.alter_queue(queue_name, schema=new_schema, force=force)
        if mismatched:
            notes.append(f"{counted(mismatched, 'waiting job')} do not match the new type (forced)")
    changed = bool(changes) or schema is not None
    found = queue.backend.stores.settings.job_queues(queue_name)
    settings = found.get(queue_name, JobQueueSettings(queue_name))
    if as_json:
        print_json({**settings.as_dict(), "notes": notes})
        return
    for note in notes:
        click.echo(note)
    if changed:
        return  # quiet when it did what it was told (-v or no option shows the settings)
    print_settings(f"job queue {queue_name}", job_queue_lines(settings))


def job_queue_lines(settings: JobQueueSettings) -> list[tuple[str, str]]:
    keep = settings.keep_for_seconds
    return [
        ("paused", "yes (batchq resume)" if settings.paused else "no"),
        ("keep_for", OFF if keep is None else format_duration(keep)),
        ("max_length", OFF if settings.max_length is None else str(settings.max_length)),
        ("overflow", settings.overflow or "-"),
        ("type", describe_type(settings.type_name)),
        ("rate", OFF if settings.rate is None else str(settings.rate)),
        ("max_running", OFF if settings.max_running is None else str(settings.max_running)),
    ]
