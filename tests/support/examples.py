"""Running the apps of examples/ as their users would: servers and workers as processes on free
ports, each app on a fresh database of its own, and plain HTTP against them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from batchq import Queue
from tests.support.db import fresh_database_url, sql
from tests.support.processes import ROOT, wait_for

EXAMPLES = ROOT / "examples"


def example_env(**extra: str) -> dict[str, str]:
    """This environment without batchq's own settings (the example brings its own)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHQ_")}
    env["PYTHONFAULTHANDLER"] = "1"  # a process that hangs shows where, on SIGABRT (stop)
    env.update(extra)
    return env


def example_database(backend_name: str, tmp_path: Path, name: str) -> str:
    """A batchq URL of an empty database for one example (a sibling of the test database)."""
    return fresh_database_url(backend_name, tmp_path, name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``cmd`` as a process (its output in ``log``), sent SIGTERM at the end of the block."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def stop(proc: subprocess.Popen[bytes], log: Path) -> None:
    """SIGTERM ``proc`` and check it exited 0 (a worker finishes its job at hand first)."""
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # faulthandler writes every thread's stack to the log
        proc.wait()
        raise AssertionError(f"no exit 30 s after SIGTERM:\n{log.read_text()}") from None
    assert code == 0, log.read_text()


def wait_until_serving(base_url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    def answers() -> bool:
        assert proc.poll() is None, log.read_text()
        try:
            httpx.get(base_url, timeout=1)
        except httpx.TransportError:
            return False
        return True

    wait_for(answers, timeout=60, interval=0.05)


def job_count(url: str) -> int:
    """Rows in batchq_job: jobs waiting or running (a job that succeeded is deleted)."""
    queue = Queue(url)
    try:
        return int(sql(queue, "SELECT COUNT(*) FROM batchq_job")[0][0])
    finally:
        queue.close()
