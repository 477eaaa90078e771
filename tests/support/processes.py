"""`batchq` as a separate process: its environment, command line, and waiting for what it does."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# The task modules worker processes import by name (jobs, hostile_app, ...), as top-level modules.
APPS_DIR = ROOT / "tests" / "apps"


# What every `batchq` of the tests runs with besides BATCHQ_URL (in a process or in this one).
BATCHQ_VARIABLES = {"BATCHQ_TASK_MODULES": "jobs", "BATCHQ_SECRET": "test-secret"}


def batchq_env(url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        BATCHQ_VARIABLES,
        BATCHQ_URL=url,
        # The task modules, and the repository for `tests.support` (jobs.py looks up its SQL there).
        PYTHONPATH=os.pathsep.join([str(APPS_DIR), str(ROOT), env.get("PYTHONPATH", "")]),
    )
    env.update(extra)
    return env


def batchq_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "batchq", *args]


def run_batchq(url: str, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        batchq_cmd(*args), env=batchq_env(url, **env), capture_output=True, text=True, timeout=timeout
    )


# Every process start_batchq started: one a test left running is killed when the test ends
# (tests/conftest.py), else it would claim the next test's jobs in the same database.
STARTED: list[subprocess.Popen[str]] = []


def start_batchq(url: str, *args: str, **env: str) -> subprocess.Popen[str]:
    """`batchq ARGS` started, killed when the test ends if it still runs."""
    proc = spawn_batchq(url, *args, **env)
    STARTED.append(proc)
    return proc


def spawn_batchq(url: str, *args: str, **env: str) -> subprocess.Popen[str]:
    """`batchq ARGS` started, for a caller that stops it itself (a dashboard a module's tests
    share, started by the first test that asks for it)."""
    return subprocess.Popen(
        batchq_cmd(*args),
        env=batchq_env(url, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_worker(backend: Any, proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    """Wait until the worker process ``proc`` is registered (batchq.ops.registry): connected, holding
    its liveness, handling SIGTERM; next it claims. A loaded machine takes seconds to get there.
    Its own row, by pid: an earlier test's worker may have left one in this database."""
    from batchq.ops.registry import list_workers

    wait_for(lambda: any(info.pid == proc.pid for info in list_workers(backend)), timeout=timeout)


def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str, status: int = 1) -> None:
    """The command failed with ``status`` and said why in one line, without a traceback."""
    assert result.returncode == status, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("batchq: error: ") and result.stderr.count("\n") == 1, result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr
