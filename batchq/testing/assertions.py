"""What a test's code enqueued, read from the real table: enqueued_jobs(), assert_enqueued(),
assert_not_enqueued(). A failing assertion lists what WAS enqueued."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backends import stored_text
from ..core.config import check_queue_name
from ..core.serializers import loads
from ..jobs.tasks import check_task_name
from ..queue import Queue, Task

ANY: Any = object()  # a filter not given: anything matches
LISTED = 20  # rows a failure message lists
READ_LIMIT = 100_000


class Unreadable:
    """A payload the test cannot read (a pickle signed with another secret, a row written by
    hand): equal to nothing, shown with the reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"<unreadable payload: {self.reason}>"


@dataclass(frozen=True)
class EnqueuedJob:
    """A job row as a test sees it: the payload read back, and whether it is due now."""

    id: int
    queue: str
    task: str
    payload: Any
    status: str  # ready, scheduled (delayed), blocked, processing, failed
    priority: int
    error_count: int
    max_errors: int
    last_error: str | None
    due_in: float  # seconds until due on the database's clock; 0 or less: due now

    @property
    def due(self) -> bool:
        return self.due_in <= 0

    def describe(self) -> str:
        when = "" if self.due else f", due in {self.due_in:.0f}s"
        tries = f", {self.error_count} failed tries" if self.error_count else ""
        state = f"[{self.status}{when}{tries}]"
        return f"job {self.id}: {self.task}({self.payload!r}) in queue {self.queue!r} {state}"


def enqueued_jobs(
    q: Queue,
    /,
    *,
    task: Task | None = None,
    payload: Any = ANY,
    queue: str | None = None,
    status: str | None = None,
) -> list[EnqueuedJob]:
    """The jobs in the table (every job not yet done: succeeded jobs are deleted), oldest first:
    of ``task`` (a name or the function), ``payload`` (equal to it: ``unittest.mock.ANY`` may
    stand inside), ``queue`` (its name) and ``status`` when given."""
    queue_name = None if queue is None else check_queue_name(queue)
    task_name = None if task is None else _task_name(q, task)
    jobs = [_job(q, row) for row in q.backend.stores.jobs.testing_jobs(queue_name, task_name, READ_LIMIT)]
    return [
        job
        for job in jobs
        if (payload is ANY or job.payload == payload) and (status is None or job.status == status)
    ]


def assert_enqueued(
    q: Queue,
    /,
    task: Task | None = None,
    payload: Any = ANY,
    *,
    queue: str | None = None,
    status: str | None = None,
    count: int | None = None,
) -> list[EnqueuedJob]:
    """Assert that jobs matching the filters are in the table: ``count`` of them, else at least
    one. Returns them. The failure says what was looked for and lists what is there."""
    found = enqueued_jobs(q, task=task, payload=payload, queue=queue, status=status)
    if (len(found) == count) if count is not None else found:
        return found
    wanted = "a job" if count is None else f"{count} job{'' if count == 1 else 's'}"
    raise AssertionError(
        f"expected {wanted} {_filters(q, task, payload, queue, status)}; found {len(found)}. " + _listing(q)
    )


def assert_not_enqueued(
    q: Queue,
    /,
    task: Task | None = None,
    payload: Any = ANY,
    *,
    queue: str | None = None,
    status: str | None = None,
) -> None:
    """Assert that no job matching the filters is in the table (with no filter: the table is
    empty of jobs)."""
    found = enqueued_jobs(q, task=task, payload=payload, queue=queue, status=status)
    if found:
        raise AssertionError(
            f"expected no job {_filters(q, task, payload, queue, status)}; found {len(found)}. " + _listing(q)
        )


def _task_name(queue: Queue, task: Task) -> str:
    """A task as rows name it: a string as written, a function by the name enqueue stores."""
    return check_task_name(task) if isinstance(task, str) else queue.resolver.name_for(task)


def _job(queue: Queue, row: Any) -> EnqueuedJob:
    return EnqueuedJob(
        id=int(row["id"]),
        queue=stored_text(row["queue"]),
        task=stored_text(row["task"]),
        payload=_payload(queue, row["payload"], row["serializer"]),
        status=row["status"],
        priority=int(row["priority"]),
        error_count=int(row["error_count"]),
        max_errors=int(row["max_errors"]),
        last_error=row["last_error"],
        # to the millisecond: SQLite's julianday() arithmetic adds float noise (3600.00003)
        due_in=round(float(row["due_in"] or 0), 3),
    )


def _payload(queue: Queue, data: Any, serializer: str) -> Any:
    try:
        return loads(None if data is None else bytes(data), serializer, queue.secret)
    except Exception as exc:
        return Unreadable(f"{type(exc).__name__}: {exc}")


def _filters(q: Queue, task: Task | None, payload: Any, queue: str | None, status: str | None) -> str:
    parts = []
    if task is not None:
        parts.append(f"of task {_task_name(q, task)!r}")
    if payload is not ANY:
        parts.append(f"with payload {payload!r}")
    if queue is not None:
        parts.append(f"in queue {queue!r}")
    if status is not None:
        parts.append(f"with status {status!r}")
    return " ".join(parts) or "at all"


def _listing(q: Queue) -> str:
    jobs = enqueued_jobs(q)
    if not jobs:
        return "No job is enqueued."
    lines = [f"Enqueued ({len(jobs)}):"] + [f"  {job.describe()}" for job in jobs[:LISTED]]
    if len(jobs) > LISTED:
        lines.append(f"  ... and {len(jobs) - LISTED} more")
    return "\n".join(lines)
