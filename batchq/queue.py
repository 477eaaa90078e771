"""The Python API: enqueue jobs, cancel them, look at and manage queues."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from .backends import OnDatabase, stored_text
from .backends.appconn import takes_app_conn
from .coordination.locks import Lock, Semaphore
from .coordination.partitions import PartitionInfo, list_partitions, set_partition_count
from .core.config import Duration, check_queue_name, existing_queue_name, parse_duration
from .core.job import JOB_ID_RANGE
from .core.serializers import secret_from_env
from .errors import ConfigError
from .jobs.dependencies import (
    check_after,
    check_links,
    check_parents,
    in_transaction,
    write_waiting,
)
from .jobs.history import HistoryEntry, prune, read_history
from .jobs.hooks import ENQUEUE_LAYERS, Enqueue, EnqueueMiddleware, checked_enqueue_middleware, run_enqueue
from .jobs.jobspec import (
    Delay,
    JobBuilder,
    JobSpec,
    Task,
    check_int,
    check_unique_key,
    set_unique_keys,
)
from .jobs.oncommit import after_commit
from .jobs.results import JobResult, prune_expired, wait_for_result
from .jobs.schedules import Schedule, Schedules, TickReport
from .jobs.tasks import Resolver, check_task_name, modules_from_env, split_modules
from .jobs.writing import JobWriter
from .ops.explain import Explanation, explain
from .policy.bounds import set_bound
from .policy.flow import Rate, check_max_running, parse_rate
from .policy.typed import QueueType, SchemaSpec, TypeCache, count_mismatched, schema_text

UNCHANGED: Any = object()  # a configure() setting not passed: left as it is
CANCEL_BATCH = 1000  # rows per statement of cancel_where: no cancel holds many locks for long
HISTORY_LIMIT_RANGE = (1, 100_000)
# A chain's or a group's step: (task, payload) or (task, payload, {enqueue's options}).
Step = tuple[Any, ...]


@dataclass(frozen=True)
class Group:
    """What Queue.group enqueued: its members, and its callback (None without ``then``)."""

    members: list[Enqueued]
    callback: Enqueued | None


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


class Enqueued(int):
    """What ``enqueue()`` returns: the job's id, an ``int`` as ever, and ``created``: True if this
    call wrote the job, False if a job with its ``unique_key`` was already waiting or running and
    this is that job's id (nothing was written). ``result(wait=...)`` is its queue's
    ``Queue.result(id, wait=...)`` (batchq.jobs.results)."""

    created: bool
    _source: Queue | None

    def __new__(cls, job_id: int, created: bool = True) -> Enqueued:
        enqueued = super().__new__(cls, job_id)
        enqueued.created = created
        enqueued._source = None
        return enqueued

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and copied) as its id and ``created``, never with its queue: a Queue holds
        connections. An unpickled one's ``result()`` says to call ``queue.result(id)``."""
        return (Enqueued, (int(self), self.created))

    def result(self, *, wait: float | None = None) -> JobResult:
        """The job's state and, once it ended, its outcome: ``Queue.result(self, wait=wait)``."""
        if self._source is None:
            raise ConfigError(
                f"job {int(self)}: this id was not returned by Queue.enqueue, so it knows no queue: "
                "call queue.result(job_id) instead"
            )
        return self._source.result(int(self), wait=wait)


class Queue(OnDatabase):
    """Jobs in the batchq tables of one database.

    ``Queue()`` uses ``$BATCHQ_URL`` or the SQLite default. Each thread gets its
    own connection, opened on first use.

    ``enqueue_middleware``: layers around this queue's enqueues, after those registered for the
    whole process (batchq.jobs.hooks: telemetry, such as batchq.contrib.otel's spans).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        secret: str | bytes | None = None,
        task_modules: str | Iterable[str] | None = None,
        enqueue_middleware: Iterable[EnqueueMiddleware] = (),
    ) -> None:
        super().__init__(url)
        self.enqueue_middleware = checked_enqueue_middleware(enqueue_middleware)
        modules = modules_from_env() if task_modules is None else split_modules(task_modules)
        self.writer = JobWriter(self)  # where the built rows go (batchq.jobs.writing)
        self._types = TypeCache()  # the job queues' types (batchq.policy.typed), re-read every second
        # Job rows: JobSpec's checks, the partition count and the queues' types (batchq.jobs.jobspec).
        self.builder = JobBuilder(
            self,  # its backend, asked at each use: batchq.aio replaces the Queue's database
            Resolver(modules),
            secret.encode() if isinstance(secret, str) else secret or secret_from_env(),
            self._types,
        )

    # The builder's, so that jobs are built with what the Queue is given, even when set later.
    @property
    def secret(self) -> bytes | None:
        return self.builder.secret

    @secret.setter
    def secret(self, value: bytes | None) -> None:
        self.builder.secret = value

    @property
    def resolver(self) -> Resolver:
        return self.builder.resolver

    @resolver.setter
    def resolver(self, value: Resolver) -> None:
        self.builder.resolver = value

    # -- enqueue --------------------------------------------------------------

    @takes_app_conn
    def enqueue(
        self,
        task: Task,
        payload: Any = None,
        *,
        queue: str = "default",
        delay: Delay | datetime = None,
        priority: int = 0,
        max_errors: int | None = None,
        serializer: str = "json",
        concurrency_key: str | None = None,
        concurrency_limit: int | None = None,
        unique_key: str | None = None,
        timeout: Delay = None,
        backoff: Delay = None,
        keep_result: bool | Duration | None = None,
        after: int | Iterable[int] | None = None,
        run_at: datetime | None = None,
        expires: Duration | datetime | None = None,
        rate_key: str | None = None,
        rate: str | Rate | None = None,
        conn: Any = None,
    ) -> Enqueued:
        """Write one job and return its id. Bad input raises before anything is written.

        With ``conn=`` (what the app holds: a Django connection, an SQLAlchemy Connection or
        Session, a PyMySQL / mysqlclient / psycopg / sqlite3 connection; batchq.backends.appconn) the
        INSERT joins that transaction: the job exists only if the caller commits.

        With ``concurrency_key``, workers run at most ``concurrency_limit`` (default 1) jobs of
        that key at once; the job waits as 'blocked' meanwhile, and other jobs run past it.

        With ``unique_key``, while a job of that key is waiting (ready, delayed, blocked) or
        running, nothing is written and that job's id is returned: the result's ``created`` is
        False (True when this call wrote the job). A job that succeeded, was cancelled or failed
        for good no longer holds its key.

        With ``timeout``, a call of the job that runs longer is stopped and counted as a failure
        (batchq.jobs.timeouts); without, the task's ``@task(timeout=...)`` applies, else the worker's.

        ``backoff`` (a duration) is this job's first retry delay, doubling with each failure up
        to an hour; without it, the task's @task(backoff=...), else `batchq run --backoff`.

        ``keep_result`` (True: for a day, or a duration) keeps the job's outcome, its return
        value or its error, for ``Queue.result(id)`` (and ``.result()`` of what this returns);
        without it, the task's @task(keep_result=...); False keeps nothing whatever the task says.

        ``after`` (a job id or ids: waiting, running, or succeeded with its history kept) makes
        the job wait until every one of them has succeeded; if one fails for good, this job fails
        too, with the reason (batchq.jobs.dependencies, docs/guides/dependencies.md).

        ``run_at`` (an aware datetime) is when the job is due, as a datetime ``delay`` is: on the
        server's clock, a time past meaning now; give one of them, not both.

        ``expires`` (a duration from now, or an aware datetime): a job that has not started by
        then is never run; it is failed with the reason 'expired' (error class
        batchq.errors.JobExpired) and not retried. A job claimed before its expiry has started.
        Without it, the task's @task(expires=...). It must come after the job is due.

        ``rate_key`` with ``rate`` ("100/m"): at most that many jobs of the key start in any
        window of the period, across every worker (docs/guides/flow-control.md); a job over it
        waits, uncounted, for its key's next free slot.
        """
        parents = None if after is None else check_after(after)
        if parents is not None:
            _check_waiting_options(delay, run_at, unique_key)
        spec = self.builder.kept_spec(  # in OPTIONS' order; not builder.spec: no **options repacking
            task,
            queue,
            delay,
            priority,
            max_errors,
            serializer,
            concurrency_key,
            concurrency_limit,
            timeout,
            backoff,
            keep_result,
            run_at,
            expires,
            rate_key,
            rate,
        )
        if ENQUEUE_LAYERS or self.enqueue_middleware:  # batchq.jobs.hooks
            write = partial(
                self._enqueue_spec, payload=payload, unique_key=unique_key, parents=parents, conn=conn
            )
            return run_enqueue(self._enqueue_layers(), Enqueue(spec, 1, conn), write)  # type: ignore[no-any-return]
        return self._enqueue_spec(spec, payload, unique_key, parents, conn)

    def _enqueue_spec(
        self, spec: JobSpec, payload: Any, unique_key: str | None, parents: list[int] | None, conn: Any
    ) -> Enqueued:
        row = self._job(spec, payload, unique_key, conn)
        if parents is not None:
            return self._enqueued(self.writer.write_waiting(row, parents, conn))
        return self._enqueued(*self.writer.write(row, conn))

    def _enqueue_layers(self) -> list[EnqueueMiddleware]:
        """The process's enqueue middleware, then this queue's own (outermost first)."""
        return [*ENQUEUE_LAYERS, *self.enqueue_middleware]

    def _enqueued(self, job_id: int, created: bool = True) -> Enqueued:
        enqueued = Enqueued(job_id, created)
        enqueued._source = self
        return enqueued

    def chain(self, steps: Sequence[Step]) -> list[Enqueued]:
        """Enqueue ``steps`` (each ``(task, payload)`` or ``(task, payload, {enqueue options})``)
        so that each waits for the one before it to succeed; all in one transaction. A step that
        fails for good fails the rest (batchq.jobs.dependencies)."""
        built = [self._step(step) for step in _check_steps(steps, "chain")]
        rows = [row for _, row in built]

        def write() -> list[int]:
            ids = [self.backend.stores.jobs.insert_job(rows[0])]
            for row in rows[1:]:
                ids.append(write_waiting(self.backend, row, [ids[-1]]))
            return ids

        def enqueue_all(spec: JobSpec) -> list[Enqueued]:
            _with_trace(rows, spec.trace_context)
            return [self._enqueued(job_id) for job_id in in_transaction(self.backend, write)]

        return self._steps_through_hooks(built[0][0], len(rows), enqueue_all)  # type: ignore[no-any-return]

    def group(self, members: Sequence[Step], then: Step | None = None) -> Group:
        """Enqueue ``members`` (steps as for chain) and, with ``then``, a callback job that waits
        for all of them: it is made due exactly once, when the last member succeeds, with
        ``"members"`` (their ids, in order) added to its payload (a dict, or None). Members keep
        their results (keep_result=True unless a step says otherwise), for the callback to read
        with ``Queue.result``. One transaction; a member that fails for good fails the callback."""
        built = [self._step(step, keep_result=True) for step in _check_steps(members, "group")]
        rows = [row for _, row in built]
        callback = None if then is None else _check_steps([then], "then")[0]
        trace: list[str | None] = [None]  # the layers' trace context, for the callback's row too

        def write() -> tuple[list[int], int | None]:
            ids = [self.backend.stores.jobs.insert_job(row) for row in rows]
            if callback is None:
                return ids, None
            task, payload, options = callback
            if payload is not None and not isinstance(payload, dict):
                raise ConfigError(
                    "group(then=...): the callback's payload must be a dict (or None): "
                    'its member ids are added to it as "members"'
                )
            row = self._step((task, {**(payload or {}), "members": ids}, options))[1]
            _with_trace([row], trace[0])
            return ids, write_waiting(self.backend, row, sorted(set(ids)))

        def enqueue_all(spec: JobSpec) -> Group:
            trace[0] = spec.trace_context
            _with_trace(rows, trace[0])
            ids, callback_id = in_transaction(self.backend, write)
            return Group(
                [self._enqueued(job_id) for job_id in ids],
                None if callback_id is None else self._enqueued(callback_id),
            )

        count = len(rows) + (callback is not None)
        return self._steps_through_hooks(built[0][0], count, enqueue_all)  # type: ignore[no-any-return]

    def _step(
        self, step: tuple[Task, Any, dict[str, Any]], **defaults: Any
    ) -> tuple[JobSpec, dict[str, Any]]:
        """A chain's or a group's step as (its checked spec, its job row)."""
        task, payload, options = step
        options = {**defaults, **options}
        for refused in ("conn", "after", "unique_key", "delay"):
            if refused in options:
                raise ConfigError(f"{refused}= is not an option of a chain's or a group's step")
        spec = self.builder.spec(task, **options)
        return spec, self._job(spec, payload, None, None)

    def _steps_through_hooks(self, first: JobSpec, count: int, write: Callable[[JobSpec], Any]) -> Any:
        """A chain or a group as one enqueue for the middleware (batchq.jobs.hooks), seen as its first
        step; the trace context the layers set goes on every job of it."""
        if ENQUEUE_LAYERS or self.enqueue_middleware:
            return run_enqueue(self._enqueue_layers(), Enqueue(first, count), write)
        return write(first)

    def enqueue_on_commit(self, app: Any, task: Task, payload: Any = None, **options: Any) -> None:
        """Write the job once the transaction ``app`` is in commits, on the queue's own
        connection; nothing if it rolls back. For a queue in another database than the app's
        (else enqueue(conn=...) is better: the job commits with the app's data, atomically).

        ``app``: a Django connection (``django.db.connection``; outside atomic() the job is
        written at once) or an SQLAlchemy Session. ``options``: enqueue's, but conn. Everything
        is checked, and the payload serialised, now: bad input raises here; ``after``'s parents
        are read now (an unknown or failed one raises here) and again when the job is written,
        as enqueue(after=) reads them (one that ended meanwhile without its history kept is
        refused then). A failure to write
        the job after the commit is logged (logger ``batchq.on_commit``) and raised where the app
        commits; a crash between the app's commit and the write loses the job
        (docs/app-transactions.md)."""
        if "conn" in options:
            raise ConfigError(
                "enqueue_on_commit() writes on the queue's own connection once the app's transaction "
                "commits: pass that transaction's connection or Session as its first argument, no conn="
            )
        unique_key = options.pop("unique_key", None)
        after = options.pop("after", None)
        parents = None if after is None else check_after(after)
        if parents is not None:
            _check_waiting_options(options.get("delay"), options.get("run_at"), unique_key)
        spec = self.builder.spec(task, **options)
        if parents is not None:  # refused now if unknown or failed; read again at the write
            check_parents(self.backend, parents)
        write = partial(self._on_commit, app=app, payload=payload, unique_key=unique_key, parents=parents)
        if ENQUEUE_LAYERS or self.enqueue_middleware:  # batchq.jobs.hooks: around the build, not the write
            run_enqueue(self._enqueue_layers(), Enqueue(spec, 1, on_commit=True), write)
        else:
            write(spec)

    def _on_commit(
        self, spec: JobSpec, app: Any, payload: Any, unique_key: str | None, parents: list[int] | None = None
    ) -> None:
        row = self._job(spec, payload, unique_key, None)
        what = f"enqueueing {row['task']} into queue {row['queue']!r}"
        if parents is None:
            after_commit(app, lambda: self.writer.write(row, None), what)
        else:  # the parents read again, and marked, as enqueue(after=) does
            after_commit(app, lambda: self.writer.write_waiting(row, parents, None), what)

    def _job(self, spec: JobSpec, payload: Any, unique_key: str | None, conn: Any) -> dict[str, Any]:
        """enqueue's job row, checked and with its payload serialised, nothing written."""
        row = self.builder.row(self.builder.template(spec, conn), payload)
        if unique_key is not None:
            row["unique_key"] = check_unique_key(unique_key)
        return row

    @takes_app_conn
    def enqueue_many(
        self,
        task: Task,
        payloads: Iterable[Any],
        *,
        queue: str = "default",
        delay: Delay | datetime = None,
        priority: int = 0,
        max_errors: int | None = None,
        serializer: str = "json",
        concurrency_key: str | None = None,
        concurrency_limit: int | None = None,
        unique_keys: Iterable[str | None] | None = None,
        timeout: Delay = None,
        backoff: Delay = None,
        keep_result: bool | Duration | None = None,
        run_at: datetime | None = None,
        expires: Duration | datetime | None = None,
        after: int | Iterable[int] | None = None,
        rate_key: str | None = None,
        rate: str | Rate | None = None,
        conn: Any = None,
    ) -> int:
        """Write one job per payload in one statement batch, all or none; returns how many.

        ``unique_keys``: one key (or None) per payload, in order, as ``enqueue``'s
        ``unique_key``: a payload whose key a waiting or running job holds, or that an earlier
        payload of the batch has, is not written, and the count leaves it out.

        ``after`` (a job id or ids), as ``enqueue``'s: every job of the batch waits until each of
        those parents has succeeded (the same parents for all; for parents of its own, enqueue a
        job with ``after=`` in the same transaction, ``conn=``). The jobs are then written one
        INSERT each (their ids are linked to the parents), still all or none. Not with
        ``delay``, ``run_at`` or ``unique_keys``.
        """
        parents = None if after is None else check_after(after)
        if parents is not None:
            _check_waiting_options(delay, run_at, None)
            if unique_keys is not None:
                raise ConfigError("after= and unique_keys= together are not supported")
        spec = self.builder.kept_spec(  # in OPTIONS' order; not builder.spec: no **options repacking
            task,
            queue,
            delay,
            priority,
            max_errors,
            serializer,
            concurrency_key,
            concurrency_limit,
            timeout,
            backoff,
            keep_result,
            run_at,
            expires,
            rate_key,
            rate,
        )
        write = partial(
            self._enqueue_many_spec, payloads=payloads, unique_keys=unique_keys, parents=parents, conn=conn
        )
        if ENQUEUE_LAYERS or self.enqueue_middleware:  # batchq.jobs.hooks
            count = len(payloads) if isinstance(payloads, Sized) else None
            return run_enqueue(self._enqueue_layers(), Enqueue(spec, count, conn), write)  # type: ignore[no-any-return]
        return write(spec)

    def _enqueue_many_spec(
        self,
        spec: JobSpec,
        payloads: Iterable[Any],
        unique_keys: Iterable[str | None] | None,
        parents: list[int] | None,
        conn: Any,
    ) -> int:
        template = self.builder.template(spec, conn)
        stored = self.builder.payloads(template, payloads)
        per_row = unique_keys is not None or parents is not None
        rows = [{**template, "payload": data} for data in stored] if per_row else None
        if unique_keys is not None:
            set_unique_keys(rows, list(unique_keys))  # type: ignore[arg-type]
        if not stored:
            return 0
        if parents is not None:
            check_links(len(stored), parents)
        return self.writer.write_many(template, stored, rows, parents, conn)

    # -- bounded queues (batchq.policy.bounds) ------------------------------------------------------

    def configure(
        self,
        queue: str,
        *,
        keep_for: Duration | None | object = UNCHANGED,
        max_length: int | None | object = UNCHANGED,
        overflow: str | None = None,
        rate: str | Rate | None | object = UNCHANGED,
        max_running: int | None | object = UNCHANGED,
    ) -> int:
        """Set a job queue's settings; what is not passed stays as it is. Bad values raise before
        anything is written.

        ``keep_for``: keep the queue's finished jobs in the history (batchq_history) this long (a
        duration: 7 days as ``"7d"``, 604800 or a timedelta); None stops keeping them (what is
        kept stays until `prune --older-than`). Workers notice within a second.

        ``max_length``: bound the queue to that many waiting jobs (None: unbounded again). An
        enqueue into a full queue fails its oldest waiting jobs, with the reason (``overflow=
        "drop_oldest"``, the default), or raises QueueFull having written nothing (``"reject"``).
        Other producer processes apply a new bound within a second.

        ``rate``: at most N of the queue's jobs start in any window of a period, across every
        worker and host (``"100/m"``, ``"10/s"``, ``"5/30s"``: batchq.policy.flow); None lifts it.
        ``max_running``: at most that many of its jobs run at once, across every worker; None
        lifts it. Jobs over a limit wait, uncounted; workers apply a change within a second
        (docs/guides/flow-control.md).

        Returns how many waiting jobs a drop_oldest bound failed at once to fit (else 0)."""
        check_queue_name(queue)
        given = (keep_for, max_length, rate, max_running)
        if all(value is UNCHANGED for value in given):
            raise ConfigError(
                f"nothing to configure for queue {queue!r}: pass keep_for=..., max_length=..., "
                "rate=..., max_running=..."
            )
        if max_length is UNCHANGED and overflow is not None:
            raise ConfigError("overflow needs max_length: pass the bound it applies to")
        new_rate = None if rate is UNCHANGED or rate is None else parse_rate(rate)
        running = None if max_running is UNCHANGED or max_running is None else check_max_running(max_running)
        keep_seconds = None if keep_for is UNCHANGED else self._keep_for_seconds(keep_for)
        dropped = 0
        if max_length is not UNCHANGED:
            dropped = set_bound(self.backend, queue, max_length, overflow)  # type: ignore[arg-type]
            self.writer.forget_bounds()
        if keep_for is not UNCHANGED:
            self.backend.stores.jobs.set_keep_for(queue, keep_seconds)
        if rate is not UNCHANGED:
            self.backend.stores.flow.set_rate(queue, new_rate)
        if max_running is not UNCHANGED:
            self.backend.stores.flow.set_max_running(queue, running)
        return dropped

    def _keep_for_seconds(self, keep_for: Any) -> float | None:
        seconds = None if keep_for is None else parse_duration(keep_for, "keep_for")
        if seconds is not None and seconds <= 0:
            raise ConfigError(f"bad keep_for {keep_for!r}: keep history for more than 0 s, or pass None")
        self.backend.stores.jobs.check_history()
        return seconds

    @takes_app_conn
    def payload_type(self, queue: str, *, conn: Any = None) -> QueueType:
        """A job queue's type as this process knows it, read again when over a second old."""
        return self.builder.payload_type(queue, conn)

    # -- cancel and inspect -----------------------------------------------------

    def cancel(self, job_id: int) -> bool:
        """Delete a job nobody is running. False if it is claimed or gone (or could never exist).
        A waiting job that keeps its result (keep_result, or its queue's keep_for) is kept as
        cancelled, in the same transaction."""
        if isinstance(job_id, bool) or not isinstance(job_id, int):
            raise ConfigError(f"bad job id {job_id!r}: use a whole number")
        if not JOB_ID_RANGE[0] <= job_id <= JOB_ID_RANGE[1]:
            return False  # out of every backend's id range: no such job
        backend = self.backend
        store = backend.stores.jobs

        def attempt() -> bool:
            try:
                with backend.transaction():
                    kept = store.keep_cancelled(job_id)
                    deleted = store.cancel(job_id)
                    if kept and not deleted:  # claimed in between: its record must not stay
                        raise _Claimed
                    if deleted:  # its dependants can never run now
                        backend.stores.dependencies.fail_dependants([job_id], "was cancelled")
            except _Claimed:
                return False
            return deleted == 1

        return backend.retrying(attempt)

    def cancel_where(self, queue: str, *, task: Task | None = None, older_than: Duration = 0) -> int:
        """Delete every waiting job (ready, delayed or blocked) of ``queue``, of ``task`` when
        given, enqueued at least ``older_than`` ago on the database's clock; never a claimed or a
        failed job (gc-error deals with those). In statements of CANCEL_BATCH rows, each its own
        transaction: a job enqueued meanwhile may be cancelled too. Returns how many."""
        name = self._existing_name(queue)
        task_name = None if task is None else self._stored_task_name(task)
        seconds = parse_duration(older_than, "older_than")
        store, cancelled = self.backend.stores.jobs, 0
        while True:
            deleted = store.cancel_where(name, task_name, seconds, CANCEL_BATCH)
            cancelled += deleted
            if deleted < CANCEL_BATCH:
                return cancelled

    def _stored_task_name(self, task: Task) -> str:
        """A task as job rows name it; a name is taken as written, so that jobs of a task no
        longer in the code can still be cancelled."""
        return check_task_name(task) if isinstance(task, str) else self.resolver.name_for(task)

    def explain(self, job_id: int) -> Explanation:
        """Why a job is or is not running, in plain words (batchq.ops.explain); reads only."""
        return explain(self.backend, job_id)

    def stats(self) -> list[QueueStats]:
        """Per-queue counts, ordered by queue name."""
        by_queue: dict[str, QueueStats] = {}
        for row in self.backend.stores.jobs.queue_counts():
            name = stored_text(row["queue"])  # SQLite: a row written by hand may hold a BLOB
            stats = by_queue.setdefault(name, QueueStats(name))
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
        self.backend.stores.jobs.set_paused(check_queue_name(queue), True)

    def resume(self, queue: str) -> None:
        self.backend.stores.jobs.set_paused(check_queue_name(queue), False)

    def paused_queues(self) -> list[str]:
        return self.backend.stores.jobs.paused_queues()

    def create_queue(self, queue: str, *, schema: SchemaSpec | None = None) -> bool:
        """Declare the type of a job queue's payloads (batchq.policy.typed): a JSON Schema (a dict), or a
        dataclass or TypedDict one is derived from. True if this set it; False if the queue has
        this type already (or no schema was given). A queue of another type raises ConfigError:
        change it with alter_queue. Job queues need no creating otherwise: enqueue makes them."""
        check_queue_name(queue)
        text = schema_text(schema)
        if text is None:
            return False
        stored = self._stored_schema(queue)
        if stored == text:
            return False
        if stored is not None:
            raise ConfigError(
                f"job queue {queue!r} has another type: change it with alter_queue({queue!r}, schema=...)"
            )
        self.alter_queue(queue, schema=schema)
        return True

    def alter_queue(self, queue: str, *, schema: SchemaSpec | None, force: bool = False) -> int:
        """Change the type of a job queue's payloads (None: untyped); returns how many waiting
        jobs (ready, delayed, blocked) do not match it (0 unless forced).

        Refused (ConfigError, nothing changed) while a waiting job does not match the new type
        (a pickled payload never does), unless ``force``: such jobs then fail, with the reason,
        when claimed. Producers in other processes use the new type within CACHE_SECONDS.
        """
        check_queue_name(queue)
        if not isinstance(force, bool):
            raise ConfigError(f"bad force {force!r}: use True or False")
        text = schema_text(schema)
        mismatched = self._mismatched(queue, QueueType(text), force)
        self.backend.stores.jobs.set_queue_schema(queue, text)
        self._types.learn(queue, text)
        return mismatched

    def queue_schema(self, queue: str) -> dict[str, Any] | None:
        """The JSON Schema of a job queue's payloads, as stored; None when it is untyped."""
        return QueueType(self._stored_schema(check_queue_name(queue))).schema

    def _stored_schema(self, queue: str) -> str | None:
        return self.backend.stores.jobs.queue_schema(queue)  # type: ignore[no-any-return]

    def _mismatched(self, queue: str, new: QueueType, force: bool) -> int:
        """How many waiting jobs do not match a new type; without force, the first raises."""
        if new.text is None:
            return 0
        return count_mismatched(
            partial(self.backend.stores.jobs.waiting_payloads, queue),
            "id",
            lambda row: new.stored_mismatch(row["payload"], row["serializer"]),
            lambda row, reason: (
                f"job {row['id']} waiting in queue {queue!r} does not match the new type "
                f"({reason}): type not changed; wait until such jobs have run, or pass "
                "force=True (they then fail with the reason when claimed)"
            ),
            force,
        )

    def keep_for(self) -> dict[str, float]:
        """The queues whose history is kept, and for how many seconds."""
        return self.backend.stores.jobs.keep_for()

    def history(
        self,
        *,
        queue: str | None = None,
        task: Task | None = None,
        since: Duration | None = None,
        failed: bool | None = None,
        job_id: int | None = None,
        limit: int = 100,
    ) -> list[HistoryEntry]:
        """Finished jobs kept in the history, newest first: of ``queue`` and ``task`` when given,
        finished within ``since`` (a duration) on the database's clock, failed ones only
        (``failed=True``) or succeeded ones only (``False``), at most ``limit``."""
        if failed is not None and not isinstance(failed, bool):
            raise ConfigError(f"bad failed {failed!r}: use True, False or None")
        if job_id is not None:
            check_int("job_id", job_id, JOB_ID_RANGE)
        check_int("limit", limit, HISTORY_LIMIT_RANGE)
        filters = {
            "queue": None if queue is None else check_queue_name(queue),
            "task": None if task is None else self._stored_task_name(task),
            "since": None if since is None else parse_duration(since, "since"),
            "outcome": None if failed is None else ("failed" if failed else "succeeded"),
            "job_id": job_id,
            "limit": limit,
        }
        return read_history(self.backend, filters)

    def result(self, job_id: int, *, wait: float | None = None) -> JobResult:
        """A job's state and, once it ended, its outcome (batchq.jobs.results.JobResult): waiting,
        running, failed (from its row while it is in the job table), succeeded or failed for good
        (from its kept result), unknown (no job and no kept result: never existed, not kept, or
        expired). With ``wait`` (seconds), until the job has ended or that time has passed (then
        its state as it is: no error); on PostgreSQL woken by NOTIFY, elsewhere polled."""
        return wait_for_result(self.backend, job_id, wait, self.secret)

    def prune(self, older_than: Duration | None = None, *, queue: str | None = None) -> int:
        """Delete history records: with ``older_than``, every record finished longer ago than
        that (of ``queue`` when given); without it, each queue's records older than its
        keep_for (only ``queue``'s when given), but for those whose own keep_result has not
        run out. Without ``queue``, also the kept results whose keep_result ran out
        (batchq.jobs.results). In bounded batches (batchq.jobs.history.prune); returns how many."""
        if queue is not None:
            check_queue_name(queue)
        expired = 0 if queue is not None else prune_expired(self.backend)
        if older_than is not None:
            return expired + prune(self.backend, [(queue, parse_duration(older_than, "older_than"))])
        limits = self.keep_for()
        if queue is not None:
            if queue not in limits:
                raise ConfigError(
                    f"queue {queue!r} has no keep_for: give older_than, or set one with "
                    f"`batchq configure {queue} --keep-for 7d`"
                )
            limits = {queue: limits[queue]}
        return expired + prune(self.backend, sorted(limits.items()), spare=True)

    def purge(self, queue: str) -> int:
        """Delete a queue's ready and failed jobs; jobs being run are left alone. A queue whose
        name (written by plain SQL) today's rules refuse is purged too, when it exists."""
        return self.backend.stores.jobs.purge(self._existing_name(queue))

    def _existing_name(self, queue: str) -> str:
        """A clean-up path's queue name: a valid one, or one a job queue in the tables has."""

        return existing_queue_name(queue, self.backend.stores.jobs.queue_exists)

    # -- locks and semaphores (batchq.coordination.locks) ----------------------------------------------

    def lock(self, name: str, *, ttl: Duration = 60, wait: Duration = 0) -> Lock:
        """A handle on the lock ``name``; nothing is written until it is acquired."""
        return Lock(self.database, name, ttl=ttl, wait=wait)

    def semaphore(self, name: str, limit: int, *, ttl: Duration = 60, wait: Duration = 0) -> Semaphore:
        """A handle on one of ``limit`` slots of the semaphore ``name``."""
        return Semaphore(self.database, name, limit, ttl=ttl, wait=wait)

    # -- partitioned claims (batchq.coordination.partitions) ---------------------------------------------

    def set_partitions(self, count: int) -> None:
        """Spread new jobs over ``count`` partitions for `batchq run --claim partition` (0: off),
        building or dropping the index those claims walk. Other producers learn the new count
        within a minute; workers move jobs left in partitions that no longer exist."""
        queues = sorted({row["queue"] for row in self.backend.stores.jobs.queue_counts()})
        set_partition_count(self.backend, count, queues)
        self.builder.forget_partitions()

    def partitions(self) -> list[PartitionInfo]:
        """Every partition, with who leases it and for how long yet."""
        return list_partitions(self.backend)

    # -- cron schedules (batchq.jobs.schedules) ------------------------------------------------

    @property
    def schedules(self) -> Schedules:
        return Schedules(self.builder)

    def schedule(self, name: str, cron: str, task: Task, **options: Any) -> Schedule:
        """Create or update a cron schedule: Schedules.add."""
        return self.schedules.add(name, cron, task, **options)

    def tick(self) -> TickReport:
        """Enqueue the due schedules' jobs, each slot once across hosts: Schedules.tick."""
        return self.schedules.tick()


class _Claimed(Exception):
    """Rolls back a cancel whose job a worker claimed between its copy and its DELETE."""


def _with_trace(rows: list[dict[str, Any]], trace_context: str | None) -> None:
    """Set the trace context the enqueue middleware chose on rows built before it ran."""
    if trace_context is not None:
        for row in rows:
            row["trace_context"] = trace_context


def _check_waiting_options(delay: Any, run_at: Any, unique_key: str | None) -> None:
    """Options a job enqueued with after= cannot take (yet), refused before anything is written."""
    for name, value in (("delay", delay), ("run_at", run_at)):
        if value is not None:
            raise ConfigError(
                f"after= and {name}= together are not supported: a waiting job is due at its release"
            )
    if unique_key is not None:
        raise ConfigError("after= and unique_key= together are not supported")


def _check_steps(steps: Any, what: str) -> list[tuple[Any, Any, dict[str, Any]]]:
    """A chain's or a group's steps as (task, payload, options); ConfigError for anything else."""
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Iterable):
        raise ConfigError(f"bad {what}: give a list of (task, payload) or (task, payload, {{options}})")
    checked = []
    for step in steps:
        if not isinstance(step, tuple) or len(step) not in (2, 3):
            raise ConfigError(f"bad {what} step {step!r}: use (task, payload) or (task, payload, {{opts}})")
        options = step[2] if len(step) == 3 else {}
        if not isinstance(options, dict):
            raise ConfigError(f"bad {what} step options {options!r}: use a dict of enqueue's options")
        checked.append((step[0], step[1], options))
    if not checked:
        raise ConfigError(f"{what} has no steps")
    return checked
