"""`batchq` in this process, through click's CliRunner: for tests of what the command line says.

invoke_batchq(url, *args, **env) takes what processes.run_batchq takes and returns what it returns
(a CompletedProcess with the exit status, stdout and stderr), so a test moves from one to the
other by its name alone. A subprocess costs about 0.35 s of interpreter start and imports, this
about 0.03 s. Keep run_batchq for what needs a real process: workers, signals, crashes, slot files,
anything a later process must not inherit from this one.
"""

from __future__ import annotations

import logging
import os
import subprocess

from click.testing import CliRunner

from batchq.cli import cli
from tests.support.processes import BATCHQ_VARIABLES


def invoke_batchq(
    url: str, *args: str, timeout: float | None = None, input: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run `batchq ARGS` with BATCHQ_URL=url and the environment run_batchq gives its process
    (these variables are set for this call only). ``timeout`` is accepted for run_batchq's
    signature and not enforced. An exception that escapes batchq, which a process would print as
    a traceback, is raised here so that the test fails on it."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    # `-v` sets up logging with basicConfig, which adds nothing when the root logger has handlers
    # (pytest's): without them, it logs to this call's stderr, as it does in a process of its own.
    root.handlers = []
    try:
        result = CliRunner().invoke(
            cli,
            list(args),
            env={**BATCHQ_VARIABLES, "BATCHQ_URL": url, **env},
            input=input,
            prog_name="batchq",
            terminal_width=_process_width(env),
        )
    finally:
        root.handlers = handlers
        root.setLevel(level)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(["batchq", *args], result.exit_code, result.stdout, result.stderr)


def _process_width(env: dict[str, str]) -> int:
    """The help's width in a process whose output is a pipe: click's default (80 columns, or
    $COLUMNS, less 2), where CliRunner would force 80."""
    columns = int(env.get("COLUMNS") or os.environ.get("COLUMNS") or 80)
    return max(min(columns, 80) - 2, 50)
