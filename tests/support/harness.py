"""Tools for the reliability suite: worker pools, ledger accounting and the figures table."""

from __future__ import annotations

import random
import re
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, fields
from typing import IO

from batchq import Queue
from batchq.runtime.sweeps import ProcessingReport, gc_processing
from tests.support.db import ledger, run_query, sql
from tests.support.processes import batchq_cmd, batchq_env, wait_for


@dataclass
class Figures:
    """One row of the reliability table."""

    backend: str
    scenario: str
    workers: int
    jobs: int
    kills: int = 0
    db_restarts: int = 0
    conn_kills: int = 0
    lost: int = 0
    duplicates: int = 0
    bound: int = 0  # duplicates allowed: crashes that landed while a job was held
    lock_retries: int = 0  # deadlocks and lock waits retried (workers and enqueuers)
    max_recovery_s: float = 0.0  # longest a crashed worker's job stayed claimed after the crash


FIGURES: list[Figures] = []


def figures_table(rows: list[Figures]) -> str:
    names = [f.name for f in fields(Figures)]
    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    for row in rows:
        values = [getattr(row, name) for name in names]
        lines.append("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in values) + " |")
    return "\n".join(lines)


def account(queue: Queue, jobs: int, figures: Figures) -> Figures:
    """Fill lost/duplicates from the ledger and record the row."""
    seen = ledger(queue)
    figures.lost = len(set(range(jobs)) - set(seen))
    figures.duplicates = len(seen) - len(set(seen))
    FIGURES.append(figures)
    return figures


_SUMMARY = re.compile(r"(\d+) lock conflicts? retried, (\d+) reconnects?\b")


class WorkerPool:
    """`batchq run` processes, each logging its summary to a file of its own."""

    def __init__(self, url: str, *args: str, **env: str) -> None:
        self.url, self.args, self.env = url, args, env
        self.running: list[tuple[subprocess.Popen[str], IO[str]]] = []
        self.finished: list[tuple[subprocess.Popen[str], IO[str]]] = []
        self.kills = 0

    def start(self, count: int = 1) -> None:
        for _ in range(count):
            log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - read after the worker ends
            proc = subprocess.Popen(
                batchq_cmd("-v", "run", "--max-procs-per-host", "64", *self.args),
                env=batchq_env(self.url, **self.env),
                stdout=subprocess.DEVNULL,
                stderr=log,
                text=True,
            )
            self.running.append((proc, log))

    def reap(self) -> None:
        for item in list(self.running):
            if item[0].poll() is not None:
                self.running.remove(item)
                self.finished.append(item)

    def kill_one(self) -> int:
        """SIGKILL a random running worker; return its pid."""
        self.reap()
        proc, log = item = random.choice(self.running)
        proc.kill()
        proc.wait()
        self.running.remove(item)
        self.finished.append(item)
        self.kills += 1
        return proc.pid

    def wait(self, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        for proc, _ in self.running:
            proc.wait(timeout=max(deadline - time.monotonic(), 1))
        self.reap()

    def stop(self) -> None:
        for proc, _ in self.running:
            proc.kill()
            proc.wait()
        self.reap()

    def logs(self) -> list[tuple[int, str]]:
        result = []
        for proc, log in self.finished:
            log.seek(0)
            result.append((proc.returncode, log.read()))
        return result

    def lock_retries(self) -> int:
        return sum(int(m.group(1)) for _, text in self.logs() for m in _SUMMARY.finditer(text))

    def reconnects(self) -> int:
        return sum(int(m.group(2)) for _, text in self.logs() for m in _SUMMARY.finditer(text))


def held_by(queue: Queue, pid: int) -> int:
    """Jobs a worker (by pid, on this host) holds claimed."""
    return sum(count for _, count in _owners(queue, worker_name(pid)))


def sweep_after_crash(queue: Queue, worker: str) -> ProcessingReport:
    """One gc-processing once the killed worker's database session has ended.

    ``worker`` is a worker name, or the host:pid: prefix of one (see worker_name).
    A server ends a dead client's session only when it reads the closed socket, a few
    milliseconds after the kill; until then the liveness lock is still held and gc-processing
    rightly treats the worker as alive (the next sweep would take the job back).
    """
    names = [name for name, _ in _owners(queue, worker)] if worker.endswith(":") else [worker]
    for name in names:
        wait_for(
            lambda name=name: queue.backend.liveness.is_alive(name) is not True, timeout=10, interval=0.002
        )
    if queue.backend.dialect != "sqlite":
        wait_for(lambda: not _orphaned_sessions(queue), timeout=10, interval=0.002)
    return gc_processing(queue)


def _orphaned_sessions(queue: Queue) -> set[int]:
    """The client ports of the sessions in the queue's database whose client socket on this host
    is no longer open.

    A killed worker's lanes each have a session of their own besides the one holding its lock;
    a lane's claim in flight at the kill can commit after the lock's session has ended, and so
    after a sweep (the next sweep takes it back: not the one sweep this harness checks).
    The server ends such a session only once its statement is done.
    """
    sessions = {int(port) for (port,) in run_query(queue, "session_client_ports")}
    return sessions - _established_local_ports()


def _established_local_ports() -> set[int]:
    """The local ports of this host's established TCP connections (/proc/net; the servers and
    their clients all run on this host)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)  # the header
            for line in lines:
                local, _, state = line.split()[1:4]
                if state == "01":
                    ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def worker_name(pid: int) -> str:
    """The prefix of the names a worker process of this host gives itself (host:pid:random)."""
    return f"{socket.gethostname()}:{pid}:"


def _owners(queue: Queue, prefix: str) -> list[tuple[str, int]]:
    """Workers whose names start with ``prefix`` holding processing jobs, and how many each."""
    rows = run_query(queue, "processing_owners", {"prefix": prefix})
    return [(str(name), int(count)) for name, count in rows]


def unfinished(queue: Queue) -> int:
    [(count,)] = sql(queue, "SELECT COUNT(*) FROM batchq_job WHERE status <> 'failed'")
    return int(count)
