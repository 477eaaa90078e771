"""What every batchq command shares: options, opening the queue, output, exit statuses.

Exit statuses, the one place they are decided (docs/reference/cli.md ("Exit statuses")):
0 all well; 1 the command could not do its work (the database is unreachable, refused it or
has no schema; the job, lock or schedule named is not in a state for it; a file or port);
2 a mistake in the command or its configuration (an unknown option, a bad value, a bad URL,
a missing --force or --yes): nothing was done; 3 a sweep found something (report_found);
4 run's watchdog. Every error is one line on stderr, `batchq: error: ...`, naming the problem
and its fix: raise a ConfigError (or click.UsageError) for a user's mistake and a BatchqError
for a failure, or call fail() / usage_error(); BatchqGroup turns all of them into that line.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn

import click

from ..backends import OnDatabase
from ..core.config import counted, format_duration, parse_duration, parse_timeout
from ..errors import BatchqError, ConfigError, PayloadError, TaskError
from ..queue import Queue

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_FOUND = 3
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")  # an option's value that is an instant, not a duration

# The errors batchq raises for what a user gave it (an option, an argument, the URL, a file it
# names): exit 2, as click's own usage errors; any other BatchqError is a failure, exit 1.
USER_MISTAKES: tuple[type[BatchqError], ...] = (ConfigError, TaskError, PayloadError)


class Duration(click.ParamType):
    name = "DURATION"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        try:
            return parse_duration(value)
        except BatchqError as exc:
            self.fail(str(exc), param, ctx)


DURATION = Duration()


def timeout_value(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """An option's timeout (config.parse_timeout); a bad one is refused with one line, exit 2."""
    try:
        return parse_timeout(value, f"{param.opts[0]} value")
    except BatchqError as exc:
        usage_error(str(exc))


def when_value(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """An option's instant: ISO 8601 with its offset (2026-11-27T12:19:20+00:00, or Z); a time
    without one is refused, as the API refuses a naive datetime (whose clock would it be?)."""
    if value is None:
        return None
    name = param.opts[0]
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        usage_error(f"bad {name} {value!r}: give an ISO 8601 time such as 2026-11-27T12:19:20+00:00")
    if when.tzinfo is None or when.utcoffset() is None:
        usage_error(f"bad {name} {value!r}: give the time's offset, as 2026-11-27T12:19:20+00:00 or ...Z")
    return when


def duration_or_when_value(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> float | datetime | None:
    """An option that takes a duration (15m) or, when it starts with a date, an instant (ISO 8601
    with its offset)."""
    if value is None:
        return None
    if _DATE.match(value.strip()):
        return when_value(ctx, param, value)
    try:
        return parse_duration(value, f"{param.opts[0]} value")
    except BatchqError as exc:
        usage_error(f"{exc}; or give an ISO 8601 time with its offset")


URL_HELP = (
    "Database URL: sqlite:///file.db, mysql://user:pass@host/db, "
    "postgresql://user:pass@host/db. Default: a SQLite file under "
    "~/.local/share/batchq. Prefer the environment variable: it keeps the "
    "password out of the process list."
)


VERBOSE_HELP = "Log failures and a summary (-v), and each job (-vv), to stderr."


def set_verbosity(verbose: int) -> None:
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.basicConfig(format="batchq: %(message)s", stream=sys.stderr)
    logging.getLogger().setLevel(level)


def _subcommand_url(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.ensure_object(dict)["url"] = value  # the subcommand's --url wins over the group's


def _subcommand_verbose(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value:
        set_verbosity(value)  # the subcommand's -v wins over the group's


_url_after = click.option("--url", metavar="URL", expose_value=False, callback=_subcommand_url, help=URL_HELP)


_verbose_after = click.option(
    "-v", "--verbose", count=True, expose_value=False, callback=_subcommand_verbose, help=VERBOSE_HELP
)


def common_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--url and -v after the subcommand too (`batchq run -v --url ...`), as rq takes them."""
    return _url_after(_verbose_after(command))


def open_queue(ctx: click.Context, task_modules: str | None = None) -> Queue:
    queue = Queue(ctx.obj["url"], task_modules=task_modules)
    existing_only(queue)
    ctx.call_on_close(queue.close)
    return queue


def existing_only(on: OnDatabase) -> None:
    """A command finds its SQLite file or says it is missing: only init-db creates one (it
    turns this off), so a mistyped path never leaves folders and an empty database behind."""
    on.database.create_missing = False


# -- output -------------------------------------------------------------------------


def n_jobs(n: int) -> str:
    return counted(n, "job")


def age(seconds: float | None) -> str:
    if seconds is None:
        return "an unknown time"  # processing_at NULL or infinite: a row written by hand
    return format_duration(float(seconds))


def printable(text: str) -> str:
    """Text as printed: as it is, or escaped (\\n, \\x1b) when it holds what a terminal would act
    on (a name or a type's title written by hand)."""
    return text if text.isprintable() else repr(text)[1:-1]


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def report_found(
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
        print_json(jobs)
    else:
        click.echo(text())
    if hook is not None:
        call_hook(hook, jobs)
    exit_with(EXIT_FOUND)


def call_hook(hook: Callable[..., Any], jobs: list[dict[str, Any]]) -> None:
    try:
        hook(jobs)
    except (Exception, SystemExit) as exc:
        name = f"{getattr(hook, '__module__', '?')}:{getattr(hook, '__qualname__', repr(hook))}"
        click.echo(f"batchq: error: hook {name} failed: {one_line(exc)}", err=True)


def one_line(exc: BaseException) -> str:
    """An exception as one short line, even when its message has several or its __str__ fails."""
    try:
        text = str(exc)
    except Exception:
        text = ""
    first = text.strip().splitlines()[:1]
    return f"{type(exc).__name__}: {first[0][:300]}" if first else type(exc).__name__


def exit_with(code: int) -> NoReturn:
    raise click.exceptions.Exit(code)


# -- errors: one line on stderr, one status per kind ---------------------------------


def fail(message: str, status: int = EXIT_ERROR) -> NoReturn:
    """End the command with `batchq: error: MESSAGE` (one line) and ``status``."""
    click.echo(f"batchq: error: {_single_line(message)}", err=True)
    exit_with(status)


def usage_error(message: str) -> NoReturn:
    """A user's mistake, found before anything was written: say what to change; exit 2."""
    fail(message, EXIT_USAGE)


def status_of(exc: BatchqError) -> int:
    return EXIT_USAGE if isinstance(exc, USER_MISTAKES) else EXIT_ERROR


def fail_batchq(exc: BatchqError) -> NoReturn:
    fail(str(exc), status_of(exc))


def fail_click(exc: click.ClickException) -> NoReturn:
    """click's own errors (unknown option, bad value, missing argument) in batchq's style: one
    line that points to the command's help, instead of click's usage banner and `Error:`."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # `batchq schedule` alone (click >= 8.2): its help
        raise exc
    message = exc.format_message().strip().rstrip(".")
    if message[1:2].islower():  # "No such option" -> "no such option"; "JSON ..." stays
        message = message[0].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        message += f" (see `{ctx.command_path} --help`)"
    fail(message, exc.exit_code)


def _single_line(text: str) -> str:
    return " ".join(line.strip() for line in text.strip().splitlines() if line.strip())
