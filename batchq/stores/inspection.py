"""The job table and its queues as operators inspect them: what `batchq metrics` counts, what
`batchq explain` reads of one job, and the dashboard's pages of jobs, payloads, claims and
searches. Statements in ``sql/<dialect>/metrics.sql``, ``explain.sql`` and ``dashboard.sql``.

It only reads: plain SELECTs in autocommit, no FOR UPDATE, no BEGIN IMMEDIATE, ages on the
database server's clock; a worker's liveness is asked as gc-processing asks it, never by taking
its lock. So a worker never waits on it. A row written by hand reads as far as it can be read.
The dashboard's actions (retry, run now, delete a failed job) are job operations: the job
store's (batchq.stores.jobs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.stored import Row, stored_count, stored_seconds, stored_text
from ..errors import BackendUnavailable, BatchqError
from .base import Store


@dataclass
class QueueMetrics:
    """One queue's numbers, as `batchq metrics` exports them."""

    queue: str
    ready: int = 0  # due: 'ready', and 'scheduled' whose time has come (promoted within a second)
    delayed: int = 0  # not due yet: a delay or a retry backoff
    processing: int = 0
    failed: int = 0
    blocked: int = 0  # due, waiting for a slot of their concurrency key
    paused: bool = False
    oldest_due_seconds: float = 0.0  # since the oldest due job's run_at; 0 with none due
    oldest_processing_seconds: float = 0.0  # the oldest claim's age; 0 with none (or none known)


@dataclass
class FinishedJobs:
    """Jobs of one queue, task and outcome kept in history that finished within the window."""

    queue: str
    task: str
    outcome: str
    jobs: int
    wall_seconds: float  # summed
    wall_max_seconds: float
    cpu_seconds: float  # summed


@dataclass(frozen=True)
class KeyHolder:
    """A job holding a slot of a concurrency key (ready or running)."""

    id: int
    status: str
    locked_by: str | None  # its worker while running (None: none recorded)


@dataclass(frozen=True)
class StoredPayload:
    """A job's payload as stored (bytes: SQLite text or numbers written by hand, encoded)."""

    data: bytes | None
    serializer: Any  # as stored


@dataclass(frozen=True)
class ClaimHolder:
    """A worker holding claimed jobs, from the processing rows."""

    name: str | None  # locked_by; None on a processing row written without one
    jobs: int
    oldest_seconds: float | None
    alive: bool | None  # None: cannot be told from here (another host's SQLite worker)


@dataclass(frozen=True)
class SearchWindow:
    """What a search found among the newest rows of one state, and how many it read."""

    rows: list[Row]
    size: int  # rows the window holds, up to the window + 1 (more: older rows were not read)


class InspectionStore(Store):
    """Read-only views of jobs and queues for the operator's commands and the dashboard."""

    # -- batchq metrics ----------------------------------------------------------------

    def queue_metrics(self) -> list[QueueMetrics]:
        """Per queue (every queue with jobs, and every queue ever paused), ordered by name."""
        by_queue: dict[str, QueueMetrics] = {}
        for row in self.db.fetchall("metrics_jobs"):
            name = stored_text(row["queue"])
            _count(by_queue.setdefault(name, QueueMetrics(name)), row)
        for row in self.db.fetchall("metrics_queues"):
            name = stored_text(row["name"])
            by_queue.setdefault(name, QueueMetrics(name)).paused = bool(row["paused"])
        return [by_queue[name] for name in sorted(by_queue)]

    def finished(self, window: float) -> list[FinishedJobs]:
        """Jobs kept in history that finished in the last ``window`` seconds, per queue, task
        and outcome."""
        return [
            FinishedJobs(
                stored_text(row["queue"]),
                stored_text(row["task"]),
                stored_text(row["outcome"]),
                stored_count(row["jobs"]),
                stored_seconds(row["wall_seconds"]) or 0.0,
                stored_seconds(row["wall_max_seconds"]) or 0.0,
                stored_seconds(row["cpu_seconds"]) or 0.0,
            )
            for row in self.db.fetchall("metrics_history", {"window": window})
        ]

    def locks_held(self) -> int:
        """Lock and semaphore slots held now (not free, not expired on the server's clock)."""
        row = self.db.fetchone("metrics_locks_held")
        return stored_count(row["held"]) if row else 0

    # -- batchq explain ----------------------------------------------------------------

    def job(self, job_id: int) -> Row | None:
        """Job ``job_id``'s row with what explain draws from it (its queue's pause, its key's
        use, how due it is); None: no such job. Read leniently by batchq.ops.explain."""
        return self.db.fetchone("explain_job", {"id": job_id})

    def jobs_ahead(self, job_id: int) -> int | None:
        """Due jobs of the job's queue a claim takes before it; None: the job is gone."""
        row = self.db.fetchone("explain_jobs_ahead", {"id": job_id})
        return None if row is None else int(row["ahead"] or 0)

    def key_holders(self, key: str | None) -> list[KeyHolder]:
        """Some of the jobs holding concurrency key ``key``'s slots, oldest first (at most five)."""
        return [
            KeyHolder(
                int(row["id"]),
                stored_text(row["status"]),
                None if row["locked_by"] is None else stored_text(row["locked_by"]),
            )
            for row in self.db.fetchall("explain_key_holders", {"key": key})
        ]

    def worker_alive(self, worker: str | None) -> bool | None:
        """A claim's worker alive? As gc-processing asks (never taking its lock); False when no
        worker is recorded (no liveness lock can be held for it), None if it cannot be told."""
        if not worker:
            return False
        try:
            return self.db.liveness.is_alive(worker)
        except BackendUnavailable:
            raise
        except BatchqError:
            return None

    # -- the dashboard -----------------------------------------------------------------

    def jobs_after(
        self, queue: str, state: str, task: str | None, priority: int, run_at: str, job_id: int, limit: int
    ) -> list[Row]:
        """Up to ``limit`` jobs of ``queue`` in ``state`` (of ``task``: None for any) at
        ``priority`` that a claim takes after the one due at ``run_at`` (as text, as the page
        queries return it) with id ``job_id``, in claim order: one index walk."""
        params = {"queue": queue, "status": state, "task": task, "limit": limit}
        return self.db.fetchall(
            "dashboard_jobs_same_priority", {**params, "priority": priority, "run_at": run_at, "id": job_id}
        )

    def jobs_below(self, queue: str, state: str, task: str | None, priority: int, limit: int) -> list[Row]:
        """Up to ``limit`` jobs of ``queue`` in ``state`` (of ``task``: None for any) below
        ``priority``, in claim order (priority DESC, run_at, id): one index walk."""
        params = {"queue": queue, "status": state, "task": task, "priority": priority, "limit": limit}
        return self.db.fetchall("dashboard_jobs_lower_priority", params)

    def payload(self, job_id: int) -> StoredPayload | None:
        """Job ``job_id``'s stored payload and serializer; None if there is no such job."""
        row = self.db.fetchone("dashboard_job_payload", {"id": job_id})
        if row is None:
            return None
        data = row["payload"]
        if data is not None and not isinstance(data, (bytes, bytearray, memoryview)):
            data = str(data).encode("utf-8", "surrogatepass")  # SQLite: written by hand
        return StoredPayload(None if data is None else bytes(data), row["serializer"])

    def claim_holders(self) -> list[ClaimHolder]:
        """The workers holding claimed jobs, by name (a worker that died without removing its
        registry row shows here too), each asked whether it is alive."""
        return [
            ClaimHolder(
                name=row["locked_by"],
                jobs=stored_count(row["jobs"]),
                oldest_seconds=stored_seconds(row["oldest_seconds"]),
                alive=self.worker_alive(row["locked_by"]),
            )
            for row in self.db.fetchall("dashboard_workers")
        ]

    def search(
        self,
        state: str,
        queue: str | None,
        task: str | None,
        text: str | None,
        *,
        window: int,
        limit: int,
        payload_bytes: int,
    ) -> SearchWindow:
        """The newest ``limit`` jobs of ``task`` with ``text`` (None: any) among the newest
        ``window`` rows of ``state`` (or of the history: "history"), of ``queue`` (None: any);
        text as bytes, in a JSON payload's first ``payload_bytes`` bytes or the last error."""
        history = state == "history"
        params = {
            "status": state,
            "queue": queue,
            "task": task,
            "text": text,
            "needle": None if text is None else text.encode("utf-8"),
            "window": window,
            "limit": limit,
            "payload_bytes": payload_bytes,
        }
        name = ("queue_" if queue is not None else "") + ("history" if history else "jobs")
        rows = self.db.fetchall(f"dashboard_search_{name}", params)
        counted = self.db.fetchone(f"dashboard_search_{name}_window", {**params, "window": window + 1})
        return SearchWindow(rows, int(counted["n"]) if counted is not None else 0)

    def search_id(self, job_id: int) -> list[Row]:
        """Job ``job_id`` in the job table and in the history (by their primary keys)."""
        return self.db.fetchall("dashboard_search_id", {"id": job_id})


def _count(metrics: QueueMetrics, row: Row) -> None:
    jobs, status = stored_count(row["jobs"]), row["status"]
    if status in ("ready", "scheduled"):
        due = stored_count(row["due"])
        metrics.ready += due
        metrics.delayed += jobs - due
        oldest_due = stored_seconds(row["oldest_due_seconds"]) or 0.0
        metrics.oldest_due_seconds = max(metrics.oldest_due_seconds, oldest_due)
    elif status == "blocked":
        due = stored_count(row["due"])
        metrics.blocked += due
        metrics.delayed += jobs - due
    elif status == "processing":
        metrics.processing += jobs
        metrics.oldest_processing_seconds = stored_seconds(row["oldest_processing_seconds"]) or 0.0
    elif status == "failed":
        metrics.failed += jobs
    # Any other status (MySQL's '' from a non-strict session) is no state a worker acts on:
    # gc-processing lists those rows.
