"""Every command's mistakes in one style: one `batchq: error:` line naming the problem and the fix,
no usage banner or traceback, and one exit status per kind (docs/reference/cli.md "Exit statuses"): 2 for a
mistake in what was typed, whatever catches it (click or batchq); 1 when the command was right
but could not do its work. Run in-process with click's CliRunner: these are about arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from batchq import Queue
from batchq.cli import cli
from tests.support.db import job_rows

USAGE, FAILED = 2, 1

# (command line, status, what the line must say); {tmp} is a folder of the test's own.
CASES: list[tuple[tuple[str, ...], int, str]] = [
    # unknown commands and options
    (("nosuch",), USAGE, "no such command 'nosuch' (see `batchq --help`)"),
    (("--nosuch", "stats"), USAGE, "no such option '--nosuch'"),
    (("run", "--nosuch"), USAGE, "(see `batchq run --help`)"),
    (("locks", "--nosuch"), USAGE, "no such option '--nosuch'"),
    (("schedule", "nosuch"), USAGE, "no such command 'nosuch' (see `batchq schedule --help`)"),
    # missing arguments and options
    (("enqueue",), USAGE, "missing argument 'TASK'"),
    (("explain",), USAGE, "missing argument 'ID'"),
    (("locks", "release"), USAGE, "missing argument 'NAME'"),
    (("mq", "prune"), USAGE, "missing option '--older-than'"),
    # bad durations
    (("run", "--max-seconds", "soon"), USAGE, "bad duration 'soon'"),
    (("run", "--timeout", "soon"), USAGE, "bad --timeout value 'soon'"),
    (("gc-processing", "--older-than", "soon"), USAGE, "bad duration 'soon'"),
    (("enqueue", "jobs:noop", "--delay", "soon"), USAGE, "bad duration 'soon'"),
    (("cancel", "--queue", "mail", "--older-than", "soon"), USAGE, "bad duration 'soon'"),
    (("history", "--since", "soon"), USAGE, "bad duration 'soon'"),
    (("mq", "prune", "--older-than", "soon"), USAGE, "bad duration 'soon'"),
    (("configure", "mail", "--keep-for", "soon"), USAGE, "keep_for"),
    # bad numbers and ranges
    (("run", "--max-jobs", "0"), USAGE, "'--max-jobs': 0 is not in the range x>=1"),
    (("enqueue", "jobs:noop", "--priority", "high"), USAGE, "'high' is not a valid integer"),
    (("enqueue", "jobs:noop", "--priority", "99999999"), USAGE, "bad priority 99999999"),
    (("explain", "abc"), USAGE, "'abc' is not a valid integer"),
    (("partitions", "set", "99999"), USAGE, "99999 is not in the range"),
    (("history", "--limit", "0"), USAGE, "'--limit': 0 is not in the range"),
    (("dashboard", "--port", "70000"), USAGE, "70000 is not in the range"),
    # bad choices and names
    (("run", "--claim", "blocks"), USAGE, "'blocks' is not one of 'row', 'partition'"),
    (("schedule", "add", "s", "@daily", "jobs:noop", "--catch-up", "often"), USAGE, "'often' is not one of"),
    (("run", "--queue", "a,b"), USAGE, "bad queue name 'a,b'"),
    (("enqueue", "jobs:noop", "--queue", "a b"), USAGE, "bad queue name 'a b'"),
    (("stop", "--queue", "a,b"), USAGE, "bad queue name 'a,b'"),
    (("cancel", "--queue", "bad queue"), USAGE, "bad queue name 'bad queue'"),
    (("locks", "release", "a b", "--force"), USAGE, "bad lock name"),
    (("enqueue", "jobs:noop", "--unique-key", ""), USAGE, "bad unique_key ''"),
    (("enqueue", "os:system"), USAGE, "not allowed"),
    (("schedule", "add", "s", "0 7 * *", "jobs:noop"), USAGE, "bad cron expression"),
    (("stats", "--url", "nosuch://x"), USAGE, "bad database URL scheme 'nosuch'"),
    # run times and expiry (issue 30): one line each, nothing written
    (("enqueue", "jobs:noop", "--run-at", "2030-01-01T09:00:00"), USAGE, "give the time's offset"),
    (("enqueue", "jobs:noop", "--run-at", "tomorrow"), USAGE, "bad --run-at 'tomorrow'"),
    (("enqueue", "jobs:noop", "--expires", "soon"), USAGE, "bad --expires value 'soon'"),
    (
        ("enqueue", "jobs:noop", "--expires", "0"),
        USAGE,
        "bad expires 0.0: a job must be allowed more than 0 s",
    ),
    (("enqueue", "jobs:noop", "--expires", "-5"), USAGE, "bad --expires value '-5'"),
    (("enqueue", "jobs:noop", "--delay", "1m", "--expires", "30s"), USAGE, "not after the job is due"),
    (("enqueue", "jobs:noop", "--expires", "2000-01-01T00:00:00Z"), USAGE, "the job could never start"),
    (("enqueue", "jobs:noop", "--delay", "1m", "--run-at", "2030-01-01T09:00:00Z"), USAGE, "not both"),
    # bad JSON
    (("enqueue", "jobs:noop", "{x"), USAGE, "not valid JSON"),
    (("schedule", "add", "s", "@daily", "jobs:noop", "--payload", "[1]"), USAGE, "use a JSON object"),
    # options that need another, or exclude one
    (("locks", "release", "nightly"), USAGE, "needs --force: add it"),
    (("purge", "mail"), USAGE, "add --yes"),
    (("gc-error", "--requeue", "--delete"), USAGE, "--requeue and --delete cannot be used together"),
    (("cancel",), USAGE, "give a job id, or --queue Q"),
    (("cancel", "7", "--queue", "mail"), USAGE, "not both"),
    # right, but it could not be done
    (("explain", "424242"), FAILED, "no job 424242"),
    (("cancel", "424242"), FAILED, "424242"),
    (("locks", "release", "nobody-has-it", "--force"), FAILED, "lock 'nobody-has-it' is not held"),
    (("schedule", "remove", "nope"), FAILED, "no schedule named 'nope'"),
    (("stats", "--url", "mysql://root@127.0.0.1:1/db"), FAILED, "cannot reach mysql://root@127.0.0.1:1/db"),
    (("stats", "--url", "sqlite:///{tmp}/none.db"), FAILED, "batchq init-db"),
]


@pytest.mark.parametrize("group", [(), ("schedule",), ("mq",)])
def test_a_group_alone_shows_its_help(group: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, list(group), prog_name="batchq")
    assert "Commands:" in result.output and "batchq: error" not in result.output, result.output


@pytest.mark.parametrize(("args", "status", "needle"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_mistake_is_one_line_and_its_kinds_status(
    db_url: str, queue: Queue, tmp_path: Path, args: tuple[str, ...], status: int, needle: str
) -> None:
    line = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    result = CliRunner().invoke(
        cli, ["--url", db_url, *line], env={"BATCHQ_TASK_MODULES": "jobs"}, prog_name="batchq"
    )
    assert result.exit_code == status, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.startswith("batchq: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert needle in result.stderr
    assert "Usage:" not in result.stderr and "Traceback" not in result.stderr
    assert job_rows(queue) == [] and queue.schedules.list() == []  # nothing written
