"""drain(): run the due jobs of a test's database in the test's own process, with batchq's Worker
(the claim, the call, the retry and the finish are `batchq run`'s), and return their outcomes."""

from __future__ import annotations

from collections.abc import Iterable

from ..core.config import Duration, check_queue_name, parse_duration
from ..core.job import Job
from ..errors import ConfigError
from ..jobs.calls import HELD, NEWER_VERSION, SNOOZED, Call, CallNext, CallOutcome
from ..queue import Queue
from ..runtime.worker import RunOptions, Worker
from .outcomes import Outcome, Outcomes

DEFAULT_MAX_JOBS = 10_000


class DrainLimit(AssertionError):
    """drain() ran max_jobs jobs and due jobs remain (a job that enqueues itself?)."""


def drain(
    q: Queue,
    /,
    queues: str | Iterable[str] | None = None,
    *,
    with_scheduled: bool | Duration = False,
    max_jobs: int = DEFAULT_MAX_JOBS,
    raise_errors: bool = False,
) -> Outcomes:
    """Run every due job of ``queues`` (a name or several; None: every queue with jobs) until
    none is left, jobs that the jobs enqueue included, and return their outcomes in order.

    Due is decided by the database's clock, as for any worker: ``with_scheduled=True`` first
    makes every delayed job of those queues due now (a delay, a retry's backoff), a duration
    (``"1h"``, seconds) those due within it. A failed try is retried only by a later drain
    (its backoff makes it not due). Paused queues are left alone, as workers leave them.

    ``raise_errors``: raise the first failure (what its task raised) once the drain is over.
    More than ``max_jobs`` jobs raise DrainLimit.
    """
    if isinstance(max_jobs, bool) or not isinstance(max_jobs, int) or max_jobs < 1:
        raise ConfigError(f"bad max_jobs {max_jobs!r}: use a whole number of 1 or more")
    names = _queue_names(queues)
    if with_scheduled is not False:
        _make_due(q, names if names is not None else _queues_with_jobs(q), with_scheduled)
    outcomes = Outcomes()
    while True:  # one pass per set of queues: a job may enqueue into a queue not yet seen
        serving = names if names is not None else _queues_with_jobs(q)
        if not serving:
            break
        noting = _Noting()
        options = RunOptions(queues=serving, max_jobs=max_jobs - len(outcomes) + 1)
        Worker(q, options, middleware=[noting]).run()
        outcomes.extend(noting.outcomes())
        if len(outcomes) > max_jobs:
            raise DrainLimit(
                f"drain ran {max_jobs} jobs and more were due (does a job enqueue itself?): "
                "raise max_jobs if that many are expected"
            )
        if not noting.calls or names is not None:
            break
    if raise_errors:
        outcomes.raise_errors()
    return outcomes


def _queue_names(queues: str | Iterable[str] | None) -> tuple[str, ...] | None:
    if queues is None:
        return None
    given = (queues,) if isinstance(queues, str) else tuple(queues)
    if not given:
        raise ConfigError("no queue to drain: name one, or pass None for every queue")
    return tuple(check_queue_name(name) for name in given)


def _queues_with_jobs(queue: Queue) -> tuple[str, ...]:
    return tuple(s.queue for s in queue.stats() if s.ready or s.delayed or s.blocked)


def _make_due(queue: Queue, names: Iterable[str], within: bool | Duration) -> None:
    seconds = None if within is True else parse_duration(within, "with_scheduled")  # type: ignore[arg-type]
    for name in names:
        queue.backend.stores.jobs.make_due(name, seconds)


class _Noting:
    """Middleware (batchq.jobs.calls), outermost around each job's call: keeps each job's outcome, and
    what its task raised, read once the run is over (the worker may still change an outcome as it
    records it: a snooze past its task's max_snoozes fails the job instead). A job put back for a
    newer version of its task, or held by its key's rate (a later drain runs it), is not run."""

    def __init__(self) -> None:
        self.calls: list[tuple[Job, CallOutcome]] = []

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        ended = call_next(call)
        if ended.kind not in (NEWER_VERSION, HELD):
            self.calls.append((call.job, ended))
        return ended

    def outcomes(self) -> list[Outcome]:
        return [_outcome(job, ended) for job, ended in self.calls]


def _outcome(job: Job, ended: CallOutcome) -> Outcome:
    if ended.kind == SNOOZED:  # put back for later: a later drain runs it when due
        return Outcome(
            job.id,
            job.queue,
            job.task,
            False,
            exception=ended.exception,
            snoozed_for=ended.snooze_seconds,
            progress=ended.progress,
        )
    if ended.failure is None:
        return Outcome(job.id, job.queue, job.task, True, value=ended.result, progress=ended.progress)
    error, raised = ended.failure.error, ended.exception
    return Outcome(job.id, job.queue, job.task, False, error=error, exception=raised, progress=ended.progress)
