"""Workers keep their liveness: unique names, idle timeouts, ghost sessions (issue 9, items 4, 5, 15)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import batchq_env, job_rows, ledger

from batchq import Queue
from batchq.backends.sqlite import worker_host_and_pid
from batchq.worker import worker_name

# `batchq` in a process that believes it is PID 1 on host "box", as in a container.
AS_PID_1 = (
    "import os, socket, sys; os.getpid = lambda: 1; socket.gethostname = lambda: 'box'; "
    "from batchq.cli import cli; cli(sys.argv[1:], prog_name='batchq')"
)


def test_worker_names_differ_between_processes_of_one_host_and_pid() -> None:
    names = {worker_name() for _ in range(1000)}
    assert len(names) == 1000
    assert all(worker_host_and_pid(name)[1] is not None for name in names)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("web-1:42:0a1b2c3d", ("web-1", 42)),
        ("web-1:42:12345678", ("web-1", 42)),  # an all-digit random part is not the pid
        ("web-1:42", ("web-1", 42)),  # as versions before the random part wrote it
        ("web-1", ("", None)),
    ],
)
def test_worker_host_and_pid(name: str, expected: tuple[str, int | None]) -> None:
    assert worker_host_and_pid(name) == expected


def test_two_containers_with_one_hostname_each_running_batchq_as_pid_1(
    server_name: str, server_url: str
) -> None:
    queue = Queue(server_url, task_modules=["jobs"])
    queue.enqueue_many("jobs:record", [{"n": n, "sleep": 0.3} for n in range(8)])
    args = ["run", "--max-procs-per-host", "64", "--wait", "1"]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", AS_PID_1, *args],
            env=batchq_env(server_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [worker.communicate(timeout=60) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], results
    assert ledger(queue) == list(range(8))
    assert job_rows(queue) == []
    queue.close()
