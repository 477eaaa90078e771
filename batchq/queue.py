"""The Python API: enqueue jobs, cancel them, look at and manage queues."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .backends import OnDatabase
from .config import Duration, check_queue_name, parse_duration
from .errors import ConfigError, PayloadError
from .explain import Explanation, explain
from .job import JOB_ID_RANGE
from .locks import Lock, Semaphore
from .serializers import dumps, secret_from_env
from .tasks import Resolver, check_task_name, modules_from_env, split_modules, task_policy, task_version

if TYPE_CHECKING:
    from .schedules import Schedule, Schedules, TickReport

Task = str | Callable[..., Any]
Delay = Duration | None
PRIORITY_RANGE = (-32768, 32767)
MAX_ERRORS_RANGE = (1, 65535)
DEFAULT_MAX_ERRORS = 10
CONCURRENCY_LIMIT_RANGE = (1, 65535)
CONCURRENCY_KEY_MAX_CHARS = 255
CANCEL_BATCH = 1000  # rows per statement of cancel_where: no cancel holds many locks for long


@dataclass
class QueueStats:
    queue: str
    ready: int = 0  # due now
    delayed: int = 0  # ready but not yet due (delay or retry backoff)
    processing: int = 0
    oldest_processing_seconds: float | None = None
    failed: int = 0
    paused: bool = False
    blocked: int = 0  # due, waiting for a slot of their concurrency key
    waiting_for_version: int = 0  # put back by a worker that knows an older version of their task


class Queue(OnDatabase):
    """Jobs in the batchq tables of one database.

    ``Queue()`` uses ``$BATCHQ_URL`` or the SQLite default. Each thread gets its
    own connection, opened on first use.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        secret: str | bytes | None = None,
        task_modules: str | Iterable[str] | None = None,
    ) -> None:
        super().__init__(url)
        self.secret = secret.encode() if isinstance(secret, str) else secret or secret_from_env()
        modules = modules_from_env() if task_modules is None else split_modules(task_modules)
        self.resolver = Resolver(modules)

    # -- enqueue --------------------------------------------------------------

    def enqueue(
        self,
        task: Task,
        payload: Any = None,
        *,
        queue: str = "default",
        delay: Delay = None,
        priority: int = 0,
        max_errors: int | None = None,
        serializer: str = "json",
        concurrency_key: str | None = None,
        concurrency_limit: int | None = None,
        backoff: Delay = None,
        conn: Any = None,
    ) -> int:
        """Write one job and return its id. Bad input raises before anything is written.

        With ``conn=`` (an open PyMySQL / sqlite3 / psycopg connection) the INSERT joins
        that connection's transaction: the job exists only if the caller commits.

        With ``concurrency_key``, workers run at most ``concurrency_limit`` (default 1) jobs of
        that key at once; the job waits as 'blocked' meanwhile, and other jobs run past it.

        ``backoff`` (a duration) is this job's first retry delay, doubling with each failure up
        to an hour; without it, the task's @task(backoff=...), else `batchq run --backoff`.
        """
        template = self.job_template(
            task, queue, delay, priority, max_errors, serializer, concurrency_key, concurrency_limit, backoff
        )
        row = self.job_row(template, payload)
        backend = self.backend
        if conn is not None:
            backend.check_connection(conn)
            return backend.insert("enqueue", row, conn=conn)
        return backend.retrying(lambda: backend.insert("enqueue", row))

    def enqueue_many(
        self,
        task: Task,
        payloads: Iterable[Any],
        *,
        queue: str = "default",
        delay: Delay = None,
        priority: int = 0,
        max_errors: int | None = None,
        serializer: str = "json",
        concurrency_key: str | None = None,
        concurrency_limit: int | None = None,
        backoff: Delay = None,
        conn: Any = None,
    ) -> int:
        """Write one job per payload in one statement batch; returns how many."""
        template = self.job_template(
            task, queue, delay, priority, max_errors, serializer, concurrency_key, concurrency_limit, backoff
        )
        rows = [self.job_row(template, payload) for payload in payloads]
        if not rows:
            return 0
        backend = self.backend
        if conn is not None:
            backend.check_connection(conn)
            return backend.insert_jobs(rows, conn=conn)
        return backend.retrying(lambda: backend.insert_jobs(rows))

    def job_template(
        self,
        task: Task,
        queue: str,
        delay: Delay,
        priority: int,
        max_errors: int | None,
        serializer: str,
        concurrency_key: str | None = None,
        concurrency_limit: int | None = None,
        backoff: Delay = None,
    ) -> dict[str, Any]:
        """Everything of a job row but its payload, validated once per call. The task's version
        is stored as it is here, at enqueue; a backoff only when given (NULL: a worker uses the
        task's as it is then, else its own)."""
        check_queue_name(queue)
        name = self.resolver.name_for(task)
        func = self.resolver.resolve(name)
        if max_errors is None:  # the task's own (@task(max_errors=...)), else the default
            max_errors = task_policy(func)[0] or DEFAULT_MAX_ERRORS
        _check_int("priority", priority, PRIORITY_RANGE)
        _check_int("max_errors", max_errors, MAX_ERRORS_RANGE)
        seconds = parse_duration(delay, "delay")
        concurrency_limit = _check_concurrency(concurrency_key, concurrency_limit)
        return {
            "queue": queue,
            "task": name,
            "serializer": serializer,
            "priority": priority,
            "max_errors": max_errors,
            "delay": seconds,
            "concurrency_key": concurrency_key,
            "concurrency_limit": concurrency_limit,
            "task_version": task_version(func),
            "backoff": None if backoff is None else parse_duration(backoff, "backoff"),
        }

    def job_row(self, template: dict[str, Any], payload: Any) -> dict[str, Any]:
        data = dumps(payload, template["serializer"], self.secret)
        if data is not None:
            self._check_size(data)
        return {**template, "payload": data}

    def _check_size(self, data: bytes) -> None:
        """The column's limit; MySQL also measures the statement as sent (max_allowed_packet)."""
        limit = self.backend.payload_limit()
        if len(data) > limit:
            raise PayloadError(
                f"payload is {len(data):,} bytes, more than this database accepts "
                f"({limit:,} bytes): store large data elsewhere and enqueue a reference to it"
            )

    # -- cancel and inspect -----------------------------------------------------

    def cancel(self, job_id: int) -> bool:
        """Delete a job nobody is running. False if it is claimed or gone (or could never exist)."""
        if isinstance(job_id, bool) or not isinstance(job_id, int):
            raise ConfigError(f"bad job id {job_id!r}: use a whole number")
        if not JOB_ID_RANGE[0] <= job_id <= JOB_ID_RANGE[1]:
            return False  # out of every backend's id range: no such job
        return self.backend.retrying(lambda: self.backend.execute("job_cancel", {"id": job_id})) == 1

    def cancel_where(self, queue: str, *, task: Task | None = None, older_than: Duration = 0) -> int:
        """Delete every waiting job (ready, delayed or blocked) of ``queue``, of ``task`` when
        given, enqueued at least ``older_than`` ago on the database's clock; never a claimed or a
        failed job (gc-error deals with those). In statements of CANCEL_BATCH rows, each its own
        transaction: a job enqueued meanwhile may be cancelled too. Returns how many."""
        params = {
            "queue": check_queue_name(queue),
            "task": None if task is None else self._stored_task_name(task),
            "older_than": parse_duration(older_than, "older_than"),
            "batch": CANCEL_BATCH,
        }
        backend, cancelled = self.backend, 0
        while True:
            deleted = backend.retrying(lambda: backend.execute("jobs_cancel_where", params))
            cancelled += deleted
            if deleted < CANCEL_BATCH:
                return cancelled

    def _stored_task_name(self, task: Task) -> str:
        """A task as job rows name it; a name is taken as written, so that jobs of a task no
        longer in the code can still be cancelled."""
        return check_task_name(task) if isinstance(task, str) else self.resolver.name_for(task)

    def explain(self, job_id: int) -> Explanation:
        """Why a job is or is not running, in plain words (batchq.explain); reads only."""
        return explain(self.backend, job_id)

    def stats(self) -> list[QueueStats]:
        """Per-queue counts, ordered by queue name."""
        by_queue: dict[str, QueueStats] = {}
        for row in self.backend.fetchall("queue_stats"):
            stats = by_queue.setdefault(row["queue"], QueueStats(row["queue"]))
            jobs, due = int(row["jobs"]), int(row["due"] or 0)
            if row["status"] in ("ready", "scheduled", "blocked"):
                stats.waiting_for_version += int(row["version_waits"] or 0)
            if row["status"] in ("ready", "scheduled"):  # a due scheduled job awaits promotion
                stats.ready += due
                stats.delayed += jobs - due
            elif row["status"] == "blocked":  # not due: a retry backoff before it waits for a slot
                stats.blocked += due
                stats.delayed += jobs - due
            elif row["status"] == "processing":
                stats.processing = jobs
                oldest = row["oldest_seconds"]  # NULL when no processing_at is known
                stats.oldest_processing_seconds = None if oldest is None else float(oldest)
            else:
                stats.failed = jobs
        for name in self.paused_queues():
            by_queue.setdefault(name, QueueStats(name)).paused = True
        return [by_queue[name] for name in sorted(by_queue)]

    # -- queue management -------------------------------------------------------

    def pause(self, queue: str) -> None:
        """Workers stop claiming from this queue until it is resumed (running workers notice within
        a second); enqueue goes on."""
        self.backend.execute("queue_set_paused", {"queue": check_queue_name(queue), "paused": 1})

    def resume(self, queue: str) -> None:
        self.backend.execute("queue_set_paused", {"queue": check_queue_name(queue), "paused": 0})

    def paused_queues(self) -> list[str]:
        return [row["name"] for row in self.backend.fetchall("queues_paused")]

    def purge(self, queue: str) -> int:
        """Delete a queue's ready and failed jobs; jobs being run are left alone."""
        return self.backend.execute("queue_purge", {"queue": check_queue_name(queue)})

    # -- locks and semaphores (batchq.locks) ----------------------------------------------

    def lock(self, name: str, *, ttl: Duration = 60, wait: Duration = 0) -> Lock:
        """A handle on the lock ``name``; nothing is written until it is acquired."""
        return Lock(self.database, name, ttl=ttl, wait=wait)

    def semaphore(self, name: str, limit: int, *, ttl: Duration = 60, wait: Duration = 0) -> Semaphore:
        """A handle on one of ``limit`` slots of the semaphore ``name``."""
        return Semaphore(self.database, name, limit, ttl=ttl, wait=wait)

    # -- cron schedules (batchq.schedules) ------------------------------------------------

    @property
    def schedules(self) -> Schedules:
        from .schedules import Schedules

        return Schedules(self)

    def schedule(self, name: str, cron: str, task: Task, **options: Any) -> Schedule:
        """Create or update a cron schedule: Schedules.add."""
        return self.schedules.add(name, cron, task, **options)

    def tick(self) -> TickReport:
        """Enqueue the due schedules' jobs, each slot once across hosts: Schedules.tick."""
        return self.schedules.tick()


def _check_concurrency(key: str | None, limit: int | None) -> int | None:
    """The limit to store (1 when a key comes without one); raises on a bad key or limit."""
    if key is None:
        if limit is not None:
            raise ConfigError("concurrency_limit needs a concurrency_key: pass the key the limit is for")
        return None
    if not isinstance(key, str) or not 0 < len(key) <= CONCURRENCY_KEY_MAX_CHARS or "\x00" in key:
        raise ConfigError(
            f"bad concurrency_key {key!r}: use a string of 1-{CONCURRENCY_KEY_MAX_CHARS} characters "
            "without NUL, such as 'customer:42'"
        )
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"bad concurrency_key {key!r}: it is not valid UTF-8 text") from None
    limit = 1 if limit is None else limit
    _check_int("concurrency_limit", limit, CONCURRENCY_LIMIT_RANGE)
    return limit


def _check_int(name: str, value: Any, bounds: tuple[int, int]) -> None:
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"bad {name} {value!r}: use a whole number from {low} to {high}")
