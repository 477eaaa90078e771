"""The worker registry's operations (batchq.ops.registry): a worker's own row, the list `batchq
status` shows, and `batchq stop`'s request. Statements in ``sql/<dialect>/workers.sql``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.stored import Row, clean_message, stored_count, stored_fraction, stored_seconds, stored_text
from .base import Store


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
    # What job_id's try last reported with batchq.progress() (batchq.jobs.reporting): a fraction from
    # 0 to 1 and a message; None when it has reported nothing yet (or nothing readable).
    job_progress: float | None = None
    job_progress_message: str | None = None


@dataclass(frozen=True)
class WorkerRow:
    """What a worker writes about itself when it starts."""

    name: str
    host: str
    pid: int
    kind: str  # "run" or "consume"
    serves: Sequence[str]  # its queues (or topics)
    heartbeat: float | None  # `run --heartbeat` (0: off): how long its session may sit idle


class WorkerStore(Store):
    """Workers: rows of ``batchq_worker``, by name."""

    def register(self, worker: WorkerRow) -> None:
        """Write a starting worker's row (again, should a reconnect find it there already)."""
        params = {
            "name": worker.name,
            "host": worker.host,
            "pid": worker.pid,
            "kind": worker.kind,
            "serves": ",".join(worker.serves),
            "heartbeat": worker.heartbeat,
        }
        self.db.execute("worker_register", params)

    def seen(self, name: str, done: int, failed: int) -> bool:
        """Refresh the worker's row with its counts; False when it was not refreshed (asked to
        stop, or the row is gone: stop_asked tells which)."""
        return self.db.execute("worker_seen", {"name": name, "done": done, "failed": failed}) == 1

    def stop_asked(self, name: str) -> bool | None:
        """Does the worker's row ask it to stop? None when it has no row."""
        row = self.db.fetchone("worker_stop_asked", {"name": name})
        return None if row is None else bool(row["stop_requested"])

    def unregister(self, name: str) -> int:
        """Delete a worker's row; 1 if there was one."""
        return self.db.execute("worker_unregister", {"name": name})

    def heartbeat(self, name: str) -> float | None:
        """A worker's `run --heartbeat` as it registered it; None if not registered or recorded."""
        row = self.db.fetchone("worker_heartbeat", {"name": name})
        return None if row is None else stored_seconds(row["heartbeat_seconds"])

    def all(self) -> list[WorkerInfo]:
        """Every registered worker, with its state as its liveness tells it."""
        return [self._info(row) for row in self.db.fetchall("workers_list")]

    def matching(self, host: str | None, queue: str | None, name: str | None) -> list[str]:
        """The names of the workers a filter matches (every one when none is given)."""
        rows = self.db.fetchall("workers_matching", {"host": host, "queue": queue, "name": name})
        return [stored_text(row["name"]) for row in rows]

    def stop(self, name: str) -> int:
        """Ask the worker ``name`` to stop; 1 if its row was found."""
        return self.db.retrying(lambda: self.db.execute("worker_stop", {"name": name}))

    def _info(self, row: Row) -> WorkerInfo:
        name = stored_text(row["name"])
        return WorkerInfo(
            name=name,
            host=stored_text(row["host"]),
            pid=stored_count(row["pid"]),
            kind=stored_text(row["kind"]),
            serves=[part for part in stored_text(row["serves"]).split(",") if part],
            state=self._state(name, bool(row["stop_requested"])),
            stop_requested=bool(row["stop_requested"]),
            running_seconds=stored_seconds(row["running_seconds"]) or 0.0,
            seen_seconds_ago=stored_seconds(row["seen_seconds_ago"]) or 0.0,
            jobs_done=stored_count(row["jobs_done"]),
            jobs_failed=stored_count(row["jobs_failed"]),
            job_id=_job_id(row["job_id"]),
            jobs_held=stored_count(row["jobs_held"]),
            job_seconds=stored_seconds(row["job_seconds"]),
            job_progress=stored_fraction(row["job_progress"]),
            job_progress_message=_message(row["job_progress_message"]),
        )

    def _state(self, name: str, stop_requested: bool) -> str:
        alive = self.db.liveness.is_alive(name)
        if alive is False:
            return "gone"
        if alive is None:
            return "unknown"
        return "stopping" if stop_requested else "running"


def _job_id(value: Any) -> int | None:
    return None if value is None else int(value)


def _message(value: Any) -> str | None:
    return None if value is None else clean_message(stored_text(value))
