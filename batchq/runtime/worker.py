"""`batchq run`: claim one job per short transaction, call it, record the outcome."""

from __future__ import annotations

import logging
import math
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any

from ..backends import Backend, stored_count, stored_seconds
from ..backends.liveness import owner_name
from ..coordination.partitions import DEFAULT_JOBS_PER_LEASE, PartitionLease, check_partitions_ready
from ..core.config import counted, parse_timeout
from ..core.failures import fingerprint_of, timeout_fingerprint
from ..core.job import Job, Kept
from ..errors import BackendError, ConfigError
from ..jobs.calls import (
    CALLED,
    FINISHED,
    HELD,
    INVALID,
    LAST_ERROR_MAX_CHARS,
    NEWER_VERSION,
    SNOOZED,
    STALE,
    TIMEOUT_CLASS,
    Busy,
    Call,
    CallNext,
    CallOutcome,
    Control,
    Failure,
    FinishInTransaction,
    KeyRates,
    Metering,
    Middleware,
    NewerVersion,
    PayloadCheck,
    Prepare,
    Tasks,
    Timeouts,
    chain,
    invoke,
)
from ..jobs.calls import describe_error as _describe_error  # noqa: F401  (tests/unit/test_task_security.py)
from ..jobs.control import snooze_limit_error
from ..jobs.dependencies import finish_parents
from ..jobs.heartbeat import DEFAULT_HEARTBEAT_SECONDS
from ..jobs.history import KEPT_STATEMENT_BYTES, Usage
from ..jobs.jobspec import check_trace_context
from ..jobs.reporting import Reporting
from ..jobs.tasks import (
    stored_version,
    task_policy,
)
from ..jobs.timeouts import (
    DEFAULT_GRACE_SECONDS,
    RETRY_FLOOR_SECONDS,
    WATCHDOG_EXIT_STATUS,
    Watch,
    Watchdog,
    timed_out,
    timeout_text,
)
from ..ops.registry import Registration
from ..policy.typed import QueueType
from ..queue import Queue
from ..stores.flow import KeyStart
from .claims import Claims, KeptJobs
from .lanes import MAX_CONCURRENCY, Budget, Crew, InHand, Sights, Ticks
from .runner import Limits, Runner

log = logging.getLogger("batchq.runtime.worker")

BACKOFF_BASE_SECONDS = 10.0
BACKOFF_MAX_SECONDS = 3600.0
TICK_SECONDS = 1.0  # how often a busy worker promotes due scheduled jobs and reads paused queues
# A job of a newer task version than this worker knows waits a tenth of its age, within these
# bounds, times a random spread, before a worker claims it again (job_wait_for_version).
VERSION_WAIT_MIN_SECONDS = 5.0
VERSION_WAIT_MAX_SECONDS = 60.0
VERSION_WAIT_SPREAD = 0.5
VERSION_WAIT_NOTE_MAX_CHARS = 255
# job_error's measurements of a try that was not measured (failed outside Metering, or abandoned)
NOT_MEASURED: dict[str, Any] = {"wall": None, "cpu": None, "peak": None, "growth": None}


def retry_delay(
    error_count: int, base: float = BACKOFF_BASE_SECONDS, cap: float = BACKOFF_MAX_SECONDS
) -> float:
    """Seconds before the next try after the ``error_count``-th failure: base * 2^(n-1), capped.

    error_count goes up to 65535 (and further in a row written by hand): the doublings past the
    cap are never computed, so the power cannot overflow a float.
    """
    if base <= 0 or cap <= 0:
        return max(min(base, cap), 0.0)
    doublings = max(error_count - 1, 0)
    if doublings >= math.log2(cap) - math.log2(base):
        return cap
    return min(math.ldexp(base, doublings), cap)


@dataclass
class RunOptions:
    queues: tuple[str, ...] = ("default",)
    max_jobs: int | None = None
    max_seconds: float | None = None
    wait: float = 0.0  # keep polling an empty queue this long before exiting
    poll_interval: float = 1.0
    handler: Callable[..., Any] | None = None
    batch_size: int = 1  # >1: claim that many per transaction and delete the successes together
    backoff_base: float = BACKOFF_BASE_SECONDS
    heartbeat: float = DEFAULT_HEARTBEAT_SECONDS  # ping the idle session this often during a job
    # "partition": claim within one leased partition at a time (batchq.coordination.partitions)
    claim: str = "row"
    jobs_per_lease: int = DEFAULT_JOBS_PER_LEASE  # with claim="partition": then lease another
    keep: bool = False  # keep every finished job in the history, whatever its queue's keep_for
    timeout: float | None = None  # how long a job may run, unless its own or its task's says
    timeout_grace: float = DEFAULT_GRACE_SECONDS  # then how long it may take to stop (batchq.jobs.timeouts)
    concurrency: int = 1  # jobs at once, each in a lane of its own (batchq.runtime.lanes)


@dataclass
class RunSummary:
    succeeded: int = 0
    errors: int = 0
    stale_finishes: int = 0  # finishes fenced off because a sweep had taken the job back
    timed_out: int = 0  # errors that were timeouts
    version_waits: int = 0  # jobs put back, uncounted: their task's version is newer than ours
    snoozed: int = 0  # tries that raised batchq.Snooze: put back for later, uncounted as errors
    held: int = 0  # jobs put back, not run, for their rate key's next slot (batchq.policy.flow)
    reconnects: int = 0
    # The most recent job ids, in the order run (bounded: a --wait worker may run for months).
    job_ids: deque[int] = field(default_factory=lambda: deque(maxlen=10_000))

    @property
    def processed(self) -> int:
        """Jobs called: a snooze too, so that --max-jobs bounds a worker whose job snoozes 0s."""
        return self.succeeded + self.errors + self.snoozed

    def add(self, lane: RunSummary) -> None:
        """Count a lane's run in this one (`run --concurrency`)."""
        for count in fields(self):
            if count.name != "job_ids":
                setattr(self, count.name, getattr(self, count.name) + getattr(lane, count.name))
        self.job_ids.extend(lane.job_ids)


class Worker:
    """`batchq run`'s loop: claim jobs, hand each to the middleware chain, record the outcome.

    ``middleware`` (batchq.jobs.calls): your own, run outermost around each job's call (drain()
    notes outcomes there). With ``options.concurrency`` over 1 the jobs run in lanes
    (batchq.runtime.lanes): Workers made by this one (``lead``), each in its own thread."""

    def __init__(
        self,
        queue: Queue,
        options: RunOptions | None = None,
        middleware: Sequence[Middleware] = (),
        *,
        lead: Worker | None = None,
    ) -> None:
        self.queue = queue
        self.options = options or RunOptions()
        self.name: str = owner_name() if lead is None else lead.name
        self.summary = RunSummary()
        self._lead = lead
        self._release_pending = False  # a connection was lost between jobs: an unseen claim may exist
        self._unknown_finishes: list[str] = []  # the tokens of jobs whose own commit went unseen
        self._paused: set[str] = set()  # queues paused when last looked (_tick)
        self._kept = KeptJobs(queue, self.options.keep)
        self._claims = Claims(queue, self.name, self._kept)
        self._next_tick = 0.0  # monotonic time of the next _tick
        # Checked here too: RunOptions may come from Python, not the CLI.
        self._timeout = parse_timeout(self.options.timeout, "run timeout")
        self._grace = parse_timeout(self.options.timeout_grace, "timeout grace") or DEFAULT_GRACE_SECONDS
        self._crew: Crew | None = None  # the lanes, when this worker leads some
        self._watchdog: Watchdog | None = None  # the runner's, or a lane's own
        self._ticks = Ticks(min(TICK_SECONDS, self.options.poll_interval))  # its lanes' shared tick
        self._runner: Runner
        self._budget: Budget
        if lead is not None:  # a lane: one runner, one --max-jobs for the whole process
            self._runner, self._budget = lead._runner, lead._budget
        else:
            check_concurrency(self.options)
            self._budget = Budget(self.options.max_jobs)
            self._runner = Runner(
                queue.backend,
                Registration(queue.backend, self.name, self.options.queues, heartbeat=self.options.heartbeat),
                self.summary,
                Limits(self.options.max_jobs, self.options.max_seconds),
                grace=self._grace,
                heartbeat=self.options.heartbeat,
                log=log,
            )
        # While a job runs: its batch, the index of the first job not yet run (so no list is
        # sliced per job), and the ones done but not deleted.
        self._in_hand: tuple[list[Job], int, list[Job]] = ([], 0, [])
        self._tasks = Tasks(lambda name: self.queue.resolver.resolve(name), self.options.handler)
        self._types: dict[str, QueueType] = {}  # the types of the claimed jobs' queues (_process)
        self._own_middleware = tuple(middleware)
        self._call_job: CallNext | None = None  # the chain, built by loop() (it needs the watchdog)
        self._versions_warned: set[tuple[str, int]] = set()  # (task, version) logged as too new

    @property
    def backend(self) -> Backend:
        return self.queue.backend

    def stop(self, *_: Any) -> None:
        """Finish the current job, then exit (SIGTERM, SIGINT)."""
        self._runner.stop()

    def run(self) -> RunSummary:
        self._runner.run(self)
        return self.summary

    # -- the runner's loop (batchq.runtime.runner.Loop) ------------------------------------------

    def prepare(self) -> None:
        """Before the worker shows alive: the history table, when --keep, and the partitions."""
        if self.options.keep:
            self.backend.stores.jobs.check_history()
        if self.options.claim == "partition":
            check_partitions_ready(self.backend)
            self._claims.lease = PartitionLease(
                self.backend, self.name, jobs_per_lease=self.options.jobs_per_lease
            )

    def close(self) -> None:
        """On the way out: free the leased partition now rather than when its lease ends."""
        lease = self._claims.lease
        if lease is not None:
            try:
                lease.release()
            except BackendError as exc:  # it expires by itself; other workers see us dead sooner
                log.warning("could not release partition %s: %s", lease.partition, exc)

    def loop(self) -> None:
        """Claim, call and finish jobs until a stop condition or --wait says so (by the runner);
        in lanes, with --concurrency."""
        if self._lead is None and self.options.concurrency > 1:
            self._lead_lanes()
            return
        if self._lead is None:
            self._watchdog = self._runner.watchdog
            self._serve()
            return
        self._watchdog = Watchdog(self._grace, self.record_abandoned)  # in the lane's thread
        try:
            self._serve()
        finally:
            self._watchdog.stop()
            self.queue.database.close()  # the lane's connection

    def _serve(self) -> None:
        self._call_job = chain(self.middleware(), invoke)
        idle_since: float | None = None
        done: list[Job] = []  # succeeded jobs whose DELETE rides with the next claim
        while not self._should_stop() and not self._budget.spent:
            jobs = self._finish_and_claim(done)
            done = []
            if jobs:
                idle_since = None
                done = self._process(jobs)
                continue
            held = self._claims.held_pause(
                len(self._active_queues()), self.options.poll_interval, self._seconds_left()
            )
            if self._claims.waiting_for_partition or held is not None:
                # not idle: other workers lease the partitions with work, or due jobs wait for
                # their queue's flow limits (batchq.policy.flow)
                idle_since = None
            else:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= self.options.wait:
                    break
            # Never idle past a lease renewal: an idle worker's lease must not lapse either.
            pause = self.options.poll_interval if held is None else held
            pause = min(pause, self.backend.liveness.beat_seconds)
            self.backend.wait_for_jobs(self.options.queues, pause, self._runner.stopped)
        if done:
            matched = self._with_reconnect(partial(self._kept.delete, done), between_jobs=False)
            self._check_done(done, matched)

    # -- lanes (batchq.runtime.lanes) ---------------------------------------------------

    def _lead_lanes(self) -> None:
        """--concurrency N: N lanes run the jobs; this thread keeps what is one per process."""
        heartbeat = self._runner.heartbeat
        if heartbeat is not None:
            heartbeat.in_job = True  # this session idles while the lanes work: keep it seen
        self._crew = Crew(self.options.concurrency, self._new_lane, self._runner.stop)
        try:
            self._crew.run(partial(self._with_reconnect, self._tick_process, False), TICK_SECONDS)
        finally:
            for lane in self._crew.lanes:
                self.summary.add(lane.summary)

    def _new_lane(self) -> Worker:
        return Worker(self.queue, self.options, self._own_middleware, lead=self)

    def _tick_process(self) -> None:
        """About once a second while the lanes work: what _tick does once per process, with the
        lanes' counts."""
        assert self._crew is not None
        summaries = [lane.summary for lane in self._crew.lanes]
        self._tend_process(sum(s.succeeded for s in summaries), sum(s.errors for s in summaries))

    def _tend_process(self, succeeded: int, errors: int) -> None:
        """The registry row with the counts (and `batchq stop`), the liveness lease, SQLite's
        vacuum: once per process, whatever number of lanes run its jobs."""
        self._runner.asked_to_stop(succeeded, errors)
        self.backend.vacuum_if_due()
        self.backend.liveness.renew_if_due()

    def in_hand(self) -> InHand:
        """A lane's jobs at hand, for another lane's watchdog (batchq.runtime.lanes.InHand): the
        one running is unfinished too."""
        batch, next_index, done = self._in_hand
        done = list(done)
        return InHand(batch[max(next_index - 1, 0) :], done, self._kept.of(done))

    def _seconds_left(self) -> float | None:
        """Until --max-seconds, if set."""
        if self.options.max_seconds is None:
            return None
        return self.options.max_seconds - self._runner.elapsed()

    def _should_stop(self) -> bool:
        return self._runner.should_stop()

    def middleware(self) -> list[Middleware]:
        """The chain around each job's call, outermost first (batchq.jobs.calls): built here only.
        A lane's session holds no liveness: no heartbeat keeps it (batchq.runtime.lanes)."""
        heartbeat = self._runner.heartbeat
        assert self._watchdog is not None and heartbeat is not None, "built by run()"
        busy = [Busy(heartbeat)] if self._lead is None else []
        return [
            *self._own_middleware,
            NewerVersion(self._tasks),
            PayloadCheck(self._types.__getitem__),
            KeyRates(self._start_keyed),
            *busy,
            Reporting(self.backend),
            FinishInTransaction(self.backend, self._tasks, self._finish_in_transaction),
            Metering(self._kept.keeps, self.queue.secret),
            Prepare(self._tasks, self.queue.secret),
            Control(),
            Timeouts(self._watchdog, self._timeout, self._count_timeout),
        ]

    def _count_timeout(self) -> None:
        self.summary.timed_out += 1

    def _start_keyed(self, job: Job, key: str, soon: bool) -> KeyStart:
        """KeyRates' check of a job's key rate (batchq.stores.flow), reconnecting."""
        return self._finish(partial(self.backend.stores.flow.start_keyed, job, key, soon))

    # -- finish and claim -------------------------------------------------------------

    def _finish_and_claim(self, done: list[Job]) -> list[Job]:
        """Delete the jobs that just succeeded and claim the next, in one short transaction.

        One commit per job instead of two; a crash before it commits re-runs the finished job,
        exactly as a crash before a DELETE of its own would.
        """
        jobs, matched = self._with_reconnect(partial(self._finish_and_claim_once, done), between_jobs=True)
        released = self._check_done(done, matched)
        self._kept.clear()
        if released and not jobs and not self._should_stop():  # their children may be due now
            return self._finish_and_claim([])
        return jobs

    def _finish_and_claim_once(self, done: list[Job]) -> tuple[list[Job], int]:
        deleted = 0
        if self._release_pending:
            # A claim may have committed without us seeing it: put it back, uncounted (after
            # deleting the finished jobs, which are ours too).
            deleted, done = self._kept.delete(done), []
            tokens = [*self._claims.unseen, *self._unknown_finishes]
            self.backend.stores.jobs.release_unknown(self.name, tokens)
            self._claims.unseen.clear()
            self._unknown_finishes.clear()
            self._release_pending = False
        if self._kept.size(done) > KEPT_STATEMENT_BYTES:  # large results: finished in pieces first
            deleted, done = deleted + self._kept.delete(done), []
        ticked = time.monotonic() >= self._next_tick
        if ticked:
            self._tick()
            if self._runner.stopped.is_set():  # `batchq stop`: claim nothing more
                return [], deleted + self._kept.delete(done)
        claimed, jobs = self._claim_next(done)
        if not jobs and not ticked and self._tick() and not self._runner.stopped.is_set():
            # nothing ready: due scheduled jobs may wait
            jobs = self._claim_next([])[1]
        return jobs, deleted + claimed

    def _tick(self) -> int:
        """About once a second (and whenever a claim finds nothing): promote due scheduled jobs,
        admit jobs waiting for a concurrency slot, and learn which queues are paused. Returns how
        many jobs became ready. A lane shares its process's tick (batchq.runtime.lanes.Ticks):
        one lane looks for all, at most once a poll interval."""
        self._next_tick = time.monotonic() + TICK_SECONDS
        if self._lead is not None:
            sights, ready = self._lead._ticks.run(self._look)
        else:
            self._tend_process(self.summary.succeeded, self.summary.errors)
            sights, ready = self._look()
        self._paused, self._kept.queues, self._claims.limited = sights
        return ready

    def _look(self) -> tuple[Sights, int]:
        """The tick's statements: what it learns of the queues, and how many jobs became ready."""
        store = self.backend.stores.jobs
        sights = Sights(store.paused_names(), store.keeping_queues(), self.backend.stores.flow.limits())
        if self._claims.lease is not None:
            self._claims.lease.tidy([name for name in self.options.queues if name not in sights.paused])
        # Expired waiting jobs are failed here, in the tick, not in the claim: the claim only
        # skips them (one more condition on the rows it reads), so a claim of jobs without an
        # expiry costs what it did, and the claim never hands out an expired job whenever the
        # tick comes. The tick's first look is one index read that finds nothing when no job has
        # an expiry (JobStore.expire_due).
        store.expire_due(self.options.keep)
        return sights, store.promote_due() + store.unblock_due()

    def _active_queues(self) -> list[str]:
        return [name for name in self.options.queues if name not in self._paused]

    def _claim_next(self, done: list[Job]) -> tuple[int, list[Job]]:
        """Delete ``done`` and claim one job (in batch mode up to batch_size) of the first queue
        that has any, within --max-jobs; returns (finished jobs deleted, jobs claimed)."""
        limit = self._budget.take(self.options.batch_size)
        if limit == 0:  # other lanes hold the rest of --max-jobs
            return self._kept.delete(done), []
        try:
            deleted, jobs = self._claims.next(self._active_queues(), limit, done)
        except BaseException:
            self._budget.give_back(limit)
            raise
        self._budget.give_back(limit - len(jobs))
        return deleted, jobs

    # -- process ------------------------------------------------------------------

    def _record(self, job: Job, outcome: CallOutcome, done: list[Job], debug: bool) -> None:
        """Write what the chain answered: a success waits in ``done`` for the next claim."""
        if outcome.kind == NEWER_VERSION:
            self._budget.give_back(1)  # not run: it does not count
            self._wait_for_version(job, outcome.known_version)
            return
        if outcome.kind == HELD:  # already put back by KeyRates
            self._budget.give_back(1)
            if outcome.snooze_seconds < 0:
                self._stale(1, [job])
            else:
                self.summary.held += 1
                log.debug(
                    "job %s (%s) held for %gs by its key's rate", job.id, job.task, outcome.snooze_seconds
                )
            return
        if outcome.kind == SNOOZED:
            self.summary.job_ids.append(job.id)
            self._snooze(job, outcome)
            return
        assert outcome.kind == INVALID or outcome.kind == CALLED, outcome.kind
        self.summary.errors += outcome.failure is not None
        if outcome.kind == INVALID:
            assert outcome.failure is not None
            self._fail_mismatched(job, outcome.failure.error)
            return
        self.summary.job_ids.append(job.id)
        if outcome.failure is not None:
            self._record_error(job, *outcome.failure, outcome.usage, for_good=outcome.for_good)
            return
        if outcome.finish is not None:
            self._finished_in_transaction(job, outcome.finish)
            return
        if outcome.kept is not None:
            self._kept.add(job, outcome.kept)
        self.summary.succeeded += 1
        done.append(job)
        if debug:
            log.debug("job %s (%s) done", job.id, job.task)

    def _finish_in_transaction(self, job: Job, kept: Kept | None) -> int:
        """A transactional task's success, in its job's open transaction (batchq.jobs.calls.
        FinishInTransaction): deleted (into the history when kept) as the next claim would, or
        with its dependants released (batchq.jobs.dependencies); 0 when a sweep took it back."""
        entries = None if kept is None else [kept]
        return self.backend.stores.jobs.delete_jobs([job], entries) or finish_parents(
            self.backend, [job], entries
        )

    def _finished_in_transaction(self, job: Job, finish: str) -> None:
        """Count a success that ended in its own transaction, or say why it did not."""
        if finish == FINISHED:
            self.summary.succeeded += 1
            log.debug("job %s (%s) done, in its own transaction", job.id, job.task)
        elif finish == STALE:
            self.summary.errors += 1  # its writes were rolled back: the try did not count
            self._stale(1, [job])
        else:  # UNKNOWN: if the commit did not happen, the next claim puts the job back
            log.warning(
                "job %s (%s): the database connection was lost as the job ended in its transaction; "
                "if that did not commit, the job goes back with this worker's next claim and runs "
                "again (what the task wrote was rolled back with it)",
                job.id,
                job.task,
            )
            self._unknown_finishes.append(job.claim_token)
            self._release_pending = True

    def _process(self, jobs: list[Job]) -> list[Job]:
        """Call each claimed job; failures are recorded one by one, the successes returned."""
        done: list[Job] = []
        self._types.clear()
        self._types.update(self._queue_types(jobs))
        call_job = self._call_job
        assert call_job is not None, "jobs are called by run()"
        debug = log.isEnabledFor(logging.DEBUG)  # once per claim, not per job
        # Once per claim too: the bound methods the loop calls for every job.
        should_stop, read_context, record = self._runner.should_stop, self._read_trace_context, self._record
        for index, job in enumerate(jobs):
            if index and should_stop():
                release = partial(self.backend.stores.jobs.release_jobs, jobs[index:])
                self._with_reconnect(release, between_jobs=False)
                self._budget.give_back(len(jobs) - index)
                break
            self._in_hand = (jobs, index + 1, done)
            record(job, call_job(Call(job, read_context)), done, debug)
        return done

    def _read_trace_context(self, job_id: int) -> str | None:
        """Call.trace_context: the job's stored trace context, by id. Telemetry never fails a job:
        a lost connection (the finish reconnects) or a value that is no trace context (a row
        written by hand) reads as None."""
        try:
            value = self.backend.stores.jobs.trace_context(job_id)
        except BackendError as exc:
            log.warning("job %s: its trace context could not be read: %s", job_id, exc)
            return None
        try:
            return check_trace_context(value)
        except ConfigError:
            log.debug("job %s: its stored trace context is not one; ignored", job_id)
            return None

    def _check_done(self, done: list[Job], matched: int) -> int:
        """Warn of finishes a sweep fenced off; returns how many jobs others wait for were
        finished here (the plain DELETE leaves them to batchq.jobs.dependencies)."""
        parents = 0
        if matched < len(done):
            finish = partial(finish_parents, self.backend, done, self._kept.of(done))
            parents = self._with_reconnect(finish, between_jobs=False)
        if matched + parents < len(done):
            self._stale(len(done) - matched - parents, done)
        return parents

    def _record_error(
        self,
        job: Job,
        error: str,
        fingerprint: str,
        error_class: str | None,
        usage: Usage | None,
        for_good: bool = False,
    ) -> None:
        """Count the failure, with the try's measurements; if it was the last try of a job whose
        history is kept, copy it into the history in the same transaction. ``for_good``: the last
        try, whatever tries are left (batchq.jobs.control)."""
        delay = self._retry_delay(job)
        params = {
            "id": job.id,
            "token": job.claim_token,
            "error": error,
            "error_class": error_class,
            "fingerprint": fingerprint,
            "delay": delay,
            **(NOT_MEASURED if usage is None else usage.row_params()),
        }
        log.info("job %s (%s) failed: %s", job.id, job.task, error.splitlines()[0])
        last_try = stored_count(job.error_count) + 1 >= stored_count(job.max_errors)
        # with its history record and its dependants' failure (batchq.jobs.dependencies)
        if last_try or for_good:
            jobs = self.backend.stores.jobs
            fail = partial(
                jobs.fail_for_good, "discard" if for_good else "last_try", params, self._kept.keeps(job)
            )
            matched = self._with_reconnect(fail, between_jobs=False)
        else:
            matched = self._finish(partial(self.backend.stores.jobs.error, params))
        if matched == 0:
            self._stale(1, [job])

    def _snooze(self, job: Job, outcome: CallOutcome) -> None:
        """Put the job back for later, uncounted (batchq.jobs.control); once it has snoozed as often
        as its task allows, fail it for good instead."""
        snooze = partial(
            self.backend.stores.jobs.snooze,
            job.id,
            job.claim_token,
            outcome.snooze_seconds,
            outcome.max_snoozes,
        )
        if self._finish(snooze):
            self.summary.snoozed += 1
            log.debug("job %s (%s) snoozed for %gs", job.id, job.task, outcome.snooze_seconds)
            return
        # Snoozed too often, or taken back by a sweep: job_discard then matches nothing either. The
        # outcome says so too, for middleware that reads it after the run (drain's).
        self.summary.errors += 1
        failure = Failure(
            snooze_limit_error(job.id, outcome.max_snoozes), fingerprint_of("SnoozeLimit", "", job.task), None
        )
        outcome.kind, outcome.failure, outcome.for_good = CALLED, failure, True
        self._record_error(job, *failure, None, for_good=True)

    # -- typed queues (batchq.policy.typed) ----------------------------------------------------

    def _queue_types(self, jobs: list[Job]) -> dict[str, QueueType]:
        """The types of the claimed jobs' queues (read at most every second), looked up once per
        claim rather than per job: a claim takes the jobs of one queue."""
        types: dict[str, QueueType] = {}
        for name in {job.queue for job in jobs}:
            types[name] = self._with_reconnect(partial(self.queue.payload_type, name), between_jobs=False)
        return types

    def _fail_mismatched(self, job: Job, reason: str) -> None:
        """Fail the job at once, counted, with the reason: a retry would read the same payload
        (an operator who fixes the row or the type can retry it: it stays as failed)."""
        log.warning("job %s (%s) failed without running: %s", job.id, job.task, reason)
        params = {
            "id": job.id,
            "token": job.claim_token,
            "error": reason[:LAST_ERROR_MAX_CHARS],
            "fingerprint": fingerprint_of("PayloadInvalid", "", job.task),
        }
        fail = partial(self.backend.stores.jobs.fail_for_good, "invalid", params, self._kept.keeps(job))
        matched = self._with_reconnect(fail, between_jobs=False)
        if matched == 0:
            self._stale(1, [job])

    def _retry_delay(self, job: Job) -> float:
        return retry_delay(stored_count(job.error_count) + 1, self._backoff_base(job))

    def _backoff_base(self, job: Job) -> float:
        """The job's own backoff (enqueue(backoff=...)), else the task's (@task(backoff=...)),
        else `run --backoff`."""
        own = _stored_backoff(job.backoff)
        if own is not None:
            return own
        try:
            func = self.options.handler or self.queue.resolver.resolve(job.task)
        except Exception:  # a task that does not resolve fails with that reason; any backoff will do
            return self.options.backoff_base
        backoff = task_policy(func)[1]
        return self.options.backoff_base if backoff is None else backoff

    def _stale(self, count: int, jobs: list[Job]) -> None:
        self.summary.stale_finishes += count
        log.warning(
            "%d of %s (%s) %s taken back by gc-processing while %s ran (this worker's database "
            "session was lost); %s outcome was not recorded",
            count,
            counted(len(jobs), "job"),
            ", ".join(str(job.id) for job in jobs),
            "was" if count == 1 else "were",
            "it" if count == 1 else "they",
            "its" if count == 1 else "their",
        )

    # -- task versions ----------------------------------------------------------------

    def _wait_for_version(self, job: Job, known: int) -> None:
        """Put the job back, uncounted and not run, for a worker that knows its version."""
        self.summary.version_waits += 1
        key = (job.task, stored_version(job.task_version))
        level = logging.DEBUG if key in self._versions_warned else logging.WARNING
        self._versions_warned.add(key)
        log.log(
            level,
            "job %s is version %s of task %s; this worker knows version %s: put back for a worker "
            "that runs the newer code (deploy it here too)",
            job.id,
            key[1],
            job.task,
            known,
        )
        wait = partial(
            self.backend.stores.jobs.wait_for_version,
            job.id,
            job.claim_token,
            note=f"worker {self.name} knows version {known}"[:VERSION_WAIT_NOTE_MAX_CHARS],
            min_delay=VERSION_WAIT_MIN_SECONDS,
            max_delay=VERSION_WAIT_MAX_SECONDS,
            spread=1 + random.random() * VERSION_WAIT_SPREAD,
        )
        if self._finish(wait) == 0:
            self._stale(1, [job])

    def record_abandoned(self, watch: Watch, why_not_stopped: str) -> None:
        """The watchdog's last act before it ends the process (in its thread): the job that would
        not stop fails, fenced by its token, due again no sooner than RETRY_FLOOR_SECONDS; the
        batch's jobs not yet run go back uncounted, and the ones done are deleted. In a lane,
        the other lanes' too: their running jobs go back uncounted, cut short by the exit."""
        backend, job = self.backend, watch.job
        store = backend.stores.jobs
        batch, next_index, done = self._in_hand
        held = [InHand(batch[next_index:], done, self._kept.of(done))]
        if self._lead is not None and self._lead._crew is not None:
            self._runner.stop()  # the other lanes claim nothing more
            held += self._lead._crew.others_in_hand(self)
        error = (
            f"JobTimeout: {timed_out(watch.timeout)}; the worker process was ended (exit status "
            f"{WATCHDOG_EXIT_STATUS}) because the job did not stop within the grace period "
            f"({timeout_text(watch.grace)}): {why_not_stopped}"
        )
        params = {
            "id": job.id,
            "token": job.claim_token,
            "error": error,
            "fingerprint": timeout_fingerprint(job.task),
            "error_class": TIMEOUT_CLASS,
            "delay": max(self._retry_delay(job), RETRY_FLOOR_SECONDS),
            **NOT_MEASURED,  # it never ended
        }

        def record() -> None:
            with backend.transaction():
                if store.error(params) == 0:
                    log.warning("job %s was taken back by gc-processing while it ran", job.id)
                for lane in held:  # each its own claim's token; the done first: they are not run again
                    if lane.done:
                        store.delete_jobs(lane.done, lane.kept)
                        finish_parents(backend, lane.done, lane.kept)  # those others wait for
                    if lane.unfinished:
                        store.release_jobs(lane.unfinished)

        backend.retrying(record)

    def _finish(self, write: Callable[[], Any]) -> Any:
        """A job's finishing write (a store method), reconnecting when the connection is lost."""
        return self._with_reconnect(write, between_jobs=False)

    # -- connection loss ------------------------------------------------------------

    def _with_reconnect(self, action: Callable[[], Any], between_jobs: bool) -> Any:
        """Run a statement, reconnecting when the connection is lost (batchq.runtime.runner). Every
        retried finish is fenced by the claim token, so a retry after an unseen commit changes
        nothing; a claim lost ``between_jobs`` may have committed unseen, and the next claim
        releases it first."""
        on_lost = self._release_later if between_jobs else None
        return self._runner.with_reconnect(action, on_lost, self.backend)

    def _release_later(self) -> None:
        self._release_pending = True


def check_concurrency(options: RunOptions) -> None:
    """--concurrency: a clear error before anything runs."""
    if isinstance(options.concurrency, bool) or not isinstance(options.concurrency, int):
        raise ConfigError(f"concurrency must be a whole number of jobs, not {options.concurrency!r}")
    if not 1 <= options.concurrency <= MAX_CONCURRENCY:
        raise ConfigError(
            f"concurrency must be 1 to {MAX_CONCURRENCY} (jobs at once in one process; each holds a "
            f"thread and a database connection), not {options.concurrency}: run more processes for more"
        )
    if options.concurrency > 1 and options.claim == "partition":
        raise ConfigError(
            "--concurrency and --claim partition do not go together: a partition is leased to one "
            "process's claims at a time; run one process per partition instead"
        )


def _stored_backoff(value: Any) -> float | None:
    """A job row's backoff in seconds; None when there is none, or it is no duration (a row
    written by hand): the task's or the run's applies then."""
    seconds = stored_seconds(value)
    return seconds if seconds is not None and seconds >= 0 else None
