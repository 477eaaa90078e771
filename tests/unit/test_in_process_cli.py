"""invoke_batchq (in this process) answers as run_batchq (a process of its own) does: the same exit
status, stdout and stderr, byte for byte, so that a test moved from one to the other tests the same
thing. On SQLite files: what is compared is the command line's plumbing, not a backend."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import invoke_batchq
from tests.support.processes import run_batchq

LINES = [
    ("--help",),
    ("stats", "--help"),
    ("--version",),
    ("init-db",),
    ("stats",),
    ("stats", "--json"),
    ("-v", "init-db"),
    ("-vv", "gc-processing"),
    ("enqueue", "jobs:noop", '{"a": 1}', "--queue", "mail"),
    ("enqueue", "os:system", '"ls"'),
    ("enqueue", "jobs:noop", "{x"),
    ("nosuch",),
    ("stats", "--nosuch"),
    ("run", "--max-jobs", "0"),
    ("gc-error", "--requeue", "--delete"),
    ("explain", "424242"),
    ("purge", "default"),
    ("stats", "--url", "nosuch://x"),
    ("stats", "--url", "mysql://app:secret@127.0.0.1:1/db"),
]


@pytest.mark.parametrize("args", LINES, ids=" ".join)
def test_in_process_answers_as_a_process(tmp_path: Path, args: tuple[str, ...]) -> None:
    answers = []
    for name, batchq in (("process", run_batchq), ("in-process", invoke_batchq)):
        folder = tmp_path / name
        folder.mkdir()
        url = f"sqlite:///{folder / 'batchq.db'}"
        if args != ("init-db",):
            assert batchq(url, "init-db").returncode == 0
        result = batchq(url, *args)
        answers.append(tuple(str(part).replace(str(folder), "FOLDER") for part in _answer(result)))
    assert answers[1] == answers[0]


def test_the_environment_given_is_this_calls_only(tmp_path: Path) -> None:
    """As a process's environment: the next call runs with the usual one again."""
    url = f"sqlite:///{tmp_path / 'batchq.db'}"
    assert invoke_batchq(url, "init-db").returncode == 0
    refused = invoke_batchq(url, "enqueue", "jobs:noop", BATCHQ_TASK_MODULES="other")
    assert refused.returncode == 2 and "not allowed" in refused.stderr
    assert invoke_batchq(url, "enqueue", "jobs:noop").returncode == 0  # BATCHQ_TASK_MODULES=jobs again


def _answer(result: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return result.returncode, result.stdout, result.stderr
