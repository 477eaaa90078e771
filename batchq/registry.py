"""The worker registry: which workers run, what they serve and do, and asking them to stop.

Every `batchq run` writes a row when it starts (``batchq_worker``), refreshes it about once a
second with its counts (at the worker's tick, never per job), reads there whether `batchq stop`
asked it to stop, and deletes it when it exits. The job a worker runs is not written here: it is
the worker's own 'processing' row of ``batchq_job``, joined in when the registry is listed.

A worker that died without deleting its row is shown as gone once its liveness says so (the
session lock or process that gc-processing asks), and its row is pruned by gc-processing once
it has not been seen for PRUNE_AFTER_SECONDS. Starting workers is cron's or systemd's job.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from .config import check_queue_name
from .stored import stored_count, stored_seconds, stored_text

if TYPE_CHECKING:
    from .backends import Backend

log = logging.getLogger("batchq.registry")

PRUNE_AFTER_SECONDS = 3600.0  # a gone worker's row stays this long after it was last seen


@dataclass(frozen=True)
class WorkerInfo:
    """One registered worker as `batchq status` shows it."""

    name: str
    host: str
    pid: int
    kind: str
    serves: list[str]
    state: str  # running | stopping (asked to) | gone (its liveness is free) | unknown (another host, SQLite)
    stop_requested: bool
    running_seconds: float
    seen_seconds_ago: float
    jobs_done: int
    jobs_failed: int
    job_id: int | None  # the job it runs (the oldest, in batch mode)
    jobs_held: int  # claimed jobs it holds
    job_seconds: float | None  # how long it has held job_id


class Registration:
    """A worker's own row: written at start, refreshed at each tick, deleted at exit."""

    def __init__(
        self,
        backend: Backend,
        name: str,
        serves: Sequence[str],
        kind: str = "run",
        heartbeat: float | None = None,
    ) -> None:
        self.backend = backend
        self.name = name
        self._row = {
            "name": name,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "kind": kind,
            "serves": ",".join(serves),
            # `run --heartbeat` (0: off): how long its session may sit idle while it is alive
            "heartbeat": heartbeat,
        }

    def register(self) -> None:
        self.backend.execute("worker_register", self._row)

    def seen(self, done: int, failed: int) -> bool:
        """Refresh the row; True when `batchq stop` asked this worker to stop. A row pruned by
        mistake (a sweep that could not see this worker's liveness) is written again."""
        params = {"name": self.name, "done": done, "failed": failed}
        if self.backend.execute("worker_seen", params) == 1:
            return False
        row = self.backend.fetchone("worker_stop_asked", {"name": self.name})
        if row is None:
            self.register()
            return False
        return bool(row["stop_requested"])

    def unregister(self) -> None:
        self.backend.execute("worker_unregister", {"name": self.name})


def registered_heartbeat(backend: Backend, name: str) -> float | None:
    """The seconds between a worker's session pings as it registered them (0: it does not ping);
    None for a worker not registered, or registered by an older batchq."""
    row = backend.fetchone("worker_heartbeat", {"name": name})
    return None if row is None else stored_seconds(row["heartbeat_seconds"])


def list_workers(backend: Backend) -> list[WorkerInfo]:
    """Every registered worker, with its state as its liveness tells it."""
    return [_info(backend, row) for row in backend.fetchall("workers_list")]


def request_stop(
    backend: Backend, *, host: str | None = None, queue: str | None = None, name: str | None = None
) -> int:
    """Ask the matching workers (every one without a filter) to finish the job at hand and
    exit; they see it within about a second of their next tick. Returns how many were asked:
    a worker whose liveness says it died is not (its row stays until gc-processing prunes it)."""
    params = {"host": host, "queue": None if queue is None else check_queue_name(queue), "name": name}
    names = [stored_text(row["name"]) for row in backend.fetchall("workers_matching", params)]
    there = [name for name in names if backend.liveness.is_alive(name) is not False]  # None: another host
    # Counted by rows found (FOUND_ROWS on MySQL): a worker asked twice is counted; one that
    # exited since it was listed is not.
    return sum(backend.retrying(partial(backend.execute, "worker_stop", {"name": name})) for name in there)


def prune_gone(backend: Backend, older_than: float = PRUNE_AFTER_SECONDS) -> int:
    """Delete the rows of workers that are gone and were last seen ``older_than`` seconds ago."""
    pruned = 0
    for info in list_workers(backend):
        if info.state == "gone" and info.seen_seconds_ago >= older_than:
            pruned += backend.execute("worker_unregister", {"name": info.name})
    return pruned


def _info(backend: Backend, row: dict[str, Any]) -> WorkerInfo:
    name = stored_text(row["name"])
    alive = backend.liveness.is_alive(name)
    if alive is False:
        state = "gone"
    elif alive is None:
        state = "unknown"
    else:
        state = "stopping" if row["stop_requested"] else "running"
    return WorkerInfo(
        name=name,
        host=stored_text(row["host"]),
        pid=stored_count(row["pid"]),
        kind=stored_text(row["kind"]),
        serves=[part for part in stored_text(row["serves"]).split(",") if part],
        state=state,
        stop_requested=bool(row["stop_requested"]),
        running_seconds=stored_seconds(row["running_seconds"]) or 0.0,
        seen_seconds_ago=stored_seconds(row["seen_seconds_ago"]) or 0.0,
        jobs_done=stored_count(row["jobs_done"]),
        jobs_failed=stored_count(row["jobs_failed"]),
        job_id=None if row["job_id"] is None else int(row["job_id"]),
        jobs_held=stored_count(row["jobs_held"]),
        job_seconds=stored_seconds(row["job_seconds"]),
    )
