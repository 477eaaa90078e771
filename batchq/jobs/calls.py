"""A job's call and the middleware around it.

The worker hands each claimed job to a chain of middleware, each a callable
``(call, call_next) -> CallOutcome`` (call_next passed by name) that may act before and after
the layers inside it, or answer without calling them. The chain `batchq run` uses, outermost
first (Worker.middleware):

  your own          Worker(middleware=...): batchq.testing's drain() notes each outcome here
  NewerVersion      a job of a newer task version than this worker knows goes back, not run
  PayloadCheck      a payload that does not match its typed queue fails without running
  KeyRates          a job over its key's rate goes back, not run, for its key's next slot
  Busy              the heartbeat pings the idle session while the job runs (not in a lane:
                    `run --concurrency`, whose lanes hold no liveness)
  Reporting         the task's progress reports written on its row, throttled (batchq.jobs.reporting)
  FinishInTransaction  a transactional task's job ends in the transaction its writes are in
  Metering          the try's figures: a failure's on the job row, a kept success's in the history
  Prepare           the task looked up, the payload read and upgraded to the task's version
  Control           Snooze, Discard, @task(retry_on=, discard_on=): how the job goes on (batchq.jobs.control)
  Timeouts          the call under its timeout, watched by the runner's watchdog
  invoke            the task itself (the end of the chain)

A new per-call feature is a new middleware in that list, not an edit of the loop. The worker
records what the chain answers (Worker._record): a success, a failed try (for good, or to be
retried), a payload failed without a call, a job put back for a newer version, a snoozed job, a
job finished in its own transaction.

JobTimeout never lands in this module's frames by a signal (timeouts.py), so the bookkeeping
around the call always runs; one raised in a thread that lands as the task returns is caught by
Timeouts, the innermost layer.
"""

from __future__ import annotations

import inspect
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple, Protocol

from ..backends import Backend, stored_text
from ..core.failures import fingerprint, fingerprint_of, timeout_fingerprint
from ..core.job import Job, Kept, calling, transaction_for_call
from ..core.serializers import loads
from ..errors import BackendError, BackendUnavailable, ClaimLost, ConfigError
from ..policy.typed import QueueType
from ..stores.flow import KeyStart
from .control import Discard, Snooze, TaskControl, snooze_seconds, task_control
from .heartbeat import Heartbeat
from .history import Meter, Usage
from .tasks import (
    UpgradeFailed,
    call_task,
    declares_version,
    stored_version,
    task_transactional,
    task_version,
    upgrade_payload,
)
from .timeouts import JobTimeout, Watch, Watchdog, job_timeout, timed_out

LAST_ERROR_MAX_CHARS = 4000
CLASS_PATH_MAX_CHARS = 255  # the error_class column
TIMEOUT_CLASS = f"{JobTimeout.__module__}.{JobTimeout.__qualname__}"  # a try stopped by its timeout

CALLED = "called"  # the task was called (or its lookup or payload failed): a try, counted
INVALID = "invalid"  # the payload does not match its queue's type: failed without a call
NEWER_VERSION = "newer_version"  # put back, uncounted, for a worker that knows its version
SNOOZED = "snoozed"  # the task raised Snooze: put back for later, uncounted (batchq.jobs.control)
HELD = "held"  # over its key's rate: put back, uncounted and not run, for its key's next slot
SOON_TRIES = 8  # KeyRates: checks of a key whose window lets a start in within a moment
SOON_MARGIN_SECONDS = 0.005  # and how far past that moment each looks again (SQLite's clock is in ms)

# How a success finished in its job's transaction ended (CallOutcome.finish; FinishInTransaction).
FINISHED = "finished"  # committed with the task's writes
STALE = "stale"  # a sweep had taken the job back: rolled back, the task's writes too
UNKNOWN = "unknown"  # the connection was lost at the commit: committed or not, nobody knows


class Failure(NamedTuple):
    """A failed try as the job row stores it."""

    error: str  # 'Type: message' and the last frames (last_error)
    fingerprint: str  # its failure group (batchq.core.failures)
    error_class: str | None  # the exception's class path (Queue.result), if any


@dataclass(frozen=True, slots=True)
class Task:
    """A job's callable and what @task declared on it, read once per task name by a worker (the
    declarations are set when the task is defined, and resolve() caches the callable too)."""

    func: Callable[..., Any]
    versioned: bool  # job versions apply to the call (Tasks.versioned)
    version: int  # task_version(func)
    control: TaskControl  # retry_on, discard_on, max_snoozes (batchq.jobs.control)
    transactional: bool = False  # @task(transactional=True): it may ask for its job's transaction


@dataclass(slots=True)
class Call:
    """A job on its way to its task; Prepare fills in the task and its arguments."""

    job: Job
    # The worker's reader of a job's stored trace context (batchq.jobs.hooks): None outside a worker.
    read_context: Callable[[int], str | None] | None = None
    task: Task | None = None
    args: tuple[Any, ...] = ()

    def trace_context(self) -> str | None:
        """The W3C trace context the job's enqueue stored ('traceparent' or 'traceparent
        tracestate'; batchq.contrib.otel), read from its row by id on each call (the claim does
        not carry it); None when it has none, or it cannot be read or is not a trace context."""
        return None if self.read_context is None else self.read_context(self.job.id)


@dataclass(slots=True)
class CallOutcome:
    """How a job's call ended, for the worker to record."""

    kind: str = CALLED  # CALLED, INVALID, NEWER_VERSION or SNOOZED
    result: Any = None  # what the task returned
    failure: Failure | None = None  # None: a success
    exception: BaseException | None = None  # what the task, or looking it up, raised
    usage: Usage | None = None  # a failed try's figures (Metering)
    kept: Kept | None = None  # a success's record for the history, when it is kept (Metering)
    known_version: int = 0  # NEWER_VERSION: the task version this worker knows
    progress: tuple[Any, ...] = ()  # the task's progress reports (batchq.jobs.reporting.Report), for drain()
    finish: str | None = None  # ended in the job's own transaction: FINISHED, STALE or UNKNOWN
    for_good: bool = False  # a failure not to be retried, whatever tries are left (Control)
    snooze_seconds: float = 0.0  # SNOOZED: how long it waits
    max_snoozes: int = 0  # SNOOZED: the most its task allows (past it, it fails for good)


CallNext = Callable[[Call], CallOutcome]


class Middleware(Protocol):
    """A layer around the call: act before and after ``call_next``, or answer in its stead."""

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome: ...


def chain(middleware: Sequence[Middleware], innermost: CallNext) -> CallNext:
    """One callable that runs ``middleware`` in order, outermost first, around ``innermost``.

    Each layer is called as ``layer(call, call_next=...)``: a partial, so the chain adds no
    Python frame of its own per layer and job."""
    call_next = innermost
    for layer in reversed(middleware):
        check_signature(layer, "middleware", "(call, call_next)")
        call_next = partial(layer, call_next=call_next)
    return call_next


def check_signature(layer: Any, what: str, takes: str) -> None:
    """A clear error now, rather than a TypeError at the first job or enqueue."""
    if not callable(layer):
        raise ConfigError(f"{what} {layer!r} is not callable")
    try:
        inspect.signature(layer).bind(None, call_next=None)
    except TypeError:
        raise ConfigError(f"{what} {layer!r} must take {takes}") from None
    except ValueError:  # no signature to read (a builtin): it is called as is
        pass


def invoke(call: Call) -> CallOutcome:
    """The end of the chain: the task called with its arguments, as the current job."""
    assert call.task is not None, "Prepare looks the task up"
    try:
        with calling(call.job, call.args):
            result = call_task(call.task.func, call.args)
    except BaseException as exc:  # sys.exit() or KeyboardInterrupt in a task too: the job's failure
        return CallOutcome(exception=exc)
    return CallOutcome(CALLED, result)  # kind, result: positionally, a third cheaper per job


# -- tasks and their versions -----------------------------------------------------


class Tasks:
    """The callables of a worker's jobs by task name (the --handler, if given, for every job)."""

    def __init__(
        self, resolve: Callable[[str], Callable[..., Any]], handler: Callable[..., Any] | None
    ) -> None:
        self._resolve = resolve
        self._handler = handler
        self._tasks: dict[str, Task] = {}

    def get(self, name: str) -> Task:
        """The task ``name`` and its declarations; raises as resolve() does, and a name that
        does not resolve is not remembered."""
        task = self._tasks.get(name)
        if task is None:
            func = self._handler or self._resolve(name)
            task = Task(
                func, self.versioned(func), task_version(func), task_control(func), task_transactional(func)
            )
            self._tasks[name] = task
        return task

    def versioned(self, func: Callable[..., Any]) -> bool:
        """Whether job versions apply to the call: always for a task; for a --handler (called for
        every job, whatever its task) only when it declares a version itself, with @task."""
        return self._handler is None or declares_version(func)

    def older_version_than(self, job: Job) -> int | None:
        """The version of the job's task this worker knows, when the job's is newer; else None
        (a task that does not resolve, or an unreadable version, fails in Prepare with the reason)."""
        if job.task_version is None:  # enqueued before schema 013: version 1
            return None
        try:
            task = self.get(job.task)
            if not task.versioned:
                return None
            version = stored_version(job.task_version)
        except Exception:
            return None
        return task.version if version > task.version else None


class NewerVersion:
    """A job of a newer version of its task than this worker knows is not run: it goes back,
    uncounted, for a worker that runs the newer code (Worker._wait_for_version)."""

    def __init__(self, tasks: Tasks) -> None:
        self._tasks = tasks

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        known = self._tasks.older_version_than(call.job)
        if known is not None:
            return CallOutcome(kind=NEWER_VERSION, known_version=known)
        return call_next(call)


class Prepare:
    """The task looked up and the payload read, upgraded first when the job is of an older
    version of its task; after the call, what it raised or a False it returned is its failure."""

    def __init__(self, tasks: Tasks, secret: bytes | None) -> None:
        self._tasks = tasks
        self._secret = secret

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        job = call.job
        try:
            task = self._tasks.get(job.task)
        except BaseException as exc:  # a task it may not call, or cannot find
            return CallOutcome(failure=described(exc, job.task), exception=exc)
        try:
            call.args = self._args(job, task)
        except UpgradeFailed as exc:  # its own error, said to be the upgrade's
            cause = exc.__cause__ or exc
            error_text = f"{exc}: {describe_error(cause)}"[:LAST_ERROR_MAX_CHARS]
            return CallOutcome(
                failure=Failure(error_text, error_fingerprint(cause, job.task), class_path(cause))
            )
        except BaseException as exc:
            return CallOutcome(failure=described(exc, job.task))
        call.task = task
        outcome = call_next(call)
        if outcome.failure is None and outcome.kind == CALLED:
            if outcome.exception is not None:
                outcome.failure = described(outcome.exception, job.task)
            elif outcome.result is False:
                outcome.failure = Failure(
                    "the task returned False", fingerprint_of("ReturnedFalse", "", job.task), None
                )
        return outcome

    def _args(self, job: Job, task: Task) -> tuple[Any, ...]:
        payload = loads(job.payload, job.serializer, self._secret)
        present = job.payload is not None
        version = stored_version(job.task_version) if task.versioned else task.version
        if version < task.version:
            payload = upgrade_payload(task.func, payload, version)
            present = payload is not None  # an upgrade may add a payload, or drop it
        return (payload,) if present else ()


class Control:
    """How the job goes on after what its task raised (batchq.jobs.control): a Snooze puts it back
    for later, uncounted; a Discard, or an exception its task's retry_on/discard_on rules out,
    fails it for good. A try stopped by its timeout is a timeout's failure whatever it raised."""

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        outcome = call_next(call)
        exc = outcome.exception
        if exc is None or outcome.failure is not None:  # a success, or the timeout's failure
            return outcome
        assert call.task is not None, "Prepare looks the task up"
        control = call.task.control
        if isinstance(exc, Snooze):
            return _snoozed(outcome, exc, control, call.job.task)
        why = control.for_good(exc)
        if why is not None:  # a Discard's own text says why
            outcome.failure = described(exc, call.job.task, None if isinstance(exc, Discard) else why)
            outcome.for_good = True
        return outcome


def _snoozed(outcome: CallOutcome, snooze: Snooze, control: TaskControl, task: str) -> CallOutcome:
    try:
        outcome.snooze_seconds = snooze_seconds(snooze)
    except ConfigError as bad:  # a Snooze whose seconds were changed after it checked them
        outcome.failure = described(bad, task)
        return outcome
    outcome.kind = SNOOZED
    outcome.max_snoozes = control.max_snoozes
    return outcome


# -- payloads, heartbeat, measurements, timeouts ----------------------------------


class PayloadCheck:
    """A payload that does not match its typed queue (a row written around batchq) is never
    handed to the task: the job fails at once with the reason (batchq.policy.typed)."""

    def __init__(self, queue_type: Callable[[str], QueueType]) -> None:
        self._queue_type = queue_type

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        job = call.job
        mismatch = self._queue_type(job.queue).stored_mismatch(job.payload, job.serializer)
        if mismatch is not None:
            fingerprint = fingerprint_of("PayloadInvalid", "", job.task)
            return CallOutcome(kind=INVALID, failure=Failure(mismatch, fingerprint, None))
        return call_next(call)


class KeyRates:
    """A job with a rate key (enqueue(rate_key=..., rate=...)) starts only while its key's rate
    allows (batchq.policy.flow): ``start`` (FlowStore.start_keyed, reconnecting) counts the start,
    or puts the job back, not run, for its key's next slot (HELD, ``snooze_seconds`` the wait;
    -1: its claim was lost to a sweep). A start the window lets in within a moment is waited
    for here. Jobs without a key pass at no cost."""

    def __init__(self, start: Callable[[Job, str, bool], KeyStart]) -> None:
        self._start = start

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        job = call.job
        if job.rate_key is None:
            return call_next(call)
        key = stored_text(job.rate_key)
        started = self._start(job, key, True)
        for tries_left in reversed(range(SOON_TRIES)):
            if started.started or started.held or started.wait is None:
                break
            time.sleep(started.wait + SOON_MARGIN_SECONDS)  # past the window's edge, whatever the rounding
            started = self._start(job, key, tries_left > 0)  # the last try holds it back
        if started.started:
            return call_next(call)
        held = CallOutcome(kind=HELD)
        held.snooze_seconds = started.wait if started.held and started.wait is not None else -1.0
        return held


class Busy:
    """The session sits idle while the job runs: the heartbeat pings it meanwhile."""

    def __init__(self, heartbeat: Heartbeat) -> None:
        self._heartbeat = heartbeat

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        self._heartbeat.in_job = True
        try:
            return call_next(call)
        finally:
            self._heartbeat.in_job = False


class FinishInTransaction:
    """A task declared @task(transactional=True) may ask for its job's transaction
    (batchq.job_transaction): the worker's own connection, a transaction begun on the first ask.
    After the call, a success ends the job in that transaction (``finish``: deleted, kept, its
    dependants released, fenced by the claim's token) and commits once, the task's writes with
    it; a failure, or a claim a sweep took back, rolls both back. Such a job's end cannot ride
    with the next claim: that is one commit more per job.

    Outside Metering, whose kept record the finish writes; inside Busy. The transaction holds
    the session lock, so the heartbeat's ping skips its beats rather than run a statement (or
    a COMMIT) in the job's transaction; statements are never retried on another connection in
    it (the job's end is left unknown instead, for the next claim to release)."""

    def __init__(self, backend: Backend, tasks: Tasks, finish: Callable[[Job, Kept | None], int]) -> None:
        self._backend = backend
        self._tasks = tasks
        self._finish = finish

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        if not self._transactional(call.job):
            return call_next(call)
        tx = JobTransaction(self._backend, call.job)
        try:
            with transaction_for_call(tx):
                outcome = call_next(call)
            if tx.begun:
                self._end(tx, call.job, outcome)
        finally:
            tx.rollback()  # whatever went wrong: no transaction is left open on the connection
        return outcome

    def _transactional(self, job: Job) -> bool:
        try:
            return self._tasks.get(job.task).transactional
        except BaseException:  # it does not resolve: Prepare fails the job with the reason
            return False

    def _end(self, tx: JobTransaction, job: Job, outcome: CallOutcome) -> None:
        """Commit the job's end with the task's writes, or roll both back; the worker records
        a failure in a transaction of its own, as any other."""
        if outcome.failure is not None or outcome.kind == SNOOZED:  # the job goes on: no trace
            tx.rollback()
            return
        if tx.lost:  # ClaimLost, caught by the task: rolled back already
            outcome.finish = STALE
            return
        if self._backend.transaction_ended():
            tx.rollback()
            outcome.failure = Failure(TX_ENDED_ERROR, fingerprint_of("TransactionEnded", "", job.task), None)
            return
        try:
            matched = self._finish(job, outcome.kept)
            if matched:
                tx.commit()
        except BackendUnavailable:  # at the commit, or before: the server knows, we do not
            outcome.finish = UNKNOWN
            return
        except BackendError as exc:  # a deadlock, a refused statement: the try fails, its writes gone
            tx.rollback()
            outcome.failure = described(exc, job.task)
            return
        outcome.finish = FINISHED if matched else STALE


TX_ENDED_ERROR = (
    "TransactionEnded: the task ended its job's transaction itself (a COMMIT or ROLLBACK on "
    "job_transaction()'s connection, or a statement that commits implicitly): what it wrote is no "
    "longer tied to the job's end"
)


class _RolledBack(Exception):
    """Thrown into the job's transaction to roll it back."""


class JobTransaction:
    """The transaction of one transactional task's job (batchq.core.job.JobTransaction): begun when
    the task first asks for it, then committed or rolled back by FinishInTransaction."""

    def __init__(self, backend: Backend, job: Job) -> None:
        self._backend = backend
        self._job = job
        self._open: AbstractContextManager[None] | None = None
        self.begun = False
        self.lost = False  # a sweep had taken the job back when the task asked (ClaimLost)

    def connection(self) -> Any:
        """The worker's connection, in the job's transaction (begun now if not yet)."""
        if self._open is None:
            if self.lost:  # rolled back: never let writes autocommit after that
                raise ClaimLost(self._lost())
            self._begin()
        return self._backend.conn

    def _begin(self) -> None:
        backend, job = self._backend, self._job
        opened = backend.transaction()
        opened.__enter__()
        self._open, self.begun = opened, True
        try:
            held = backend.stores.jobs.claim_held(job.id, job.claim_token)
        except BaseException:
            self.rollback()
            raise
        if not held:
            self.rollback()
            self.lost = True
            raise ClaimLost(self._lost())

    def _lost(self) -> str:
        return (
            f"job {self._job.id} was taken back by gc-processing from this worker (its database "
            "session or lease was lost): its transaction was rolled back, and this try counts nowhere"
        )

    def commit(self) -> None:
        opened, self._open = self._open, None
        if opened is not None:
            opened.__exit__(None, None, None)

    def rollback(self) -> None:
        """End the transaction, if open, undoing it (never raises: a connection that cannot roll
        back is dropped, which ends it too)."""
        opened, self._open = self._open, None
        if opened is not None:
            opened.__exit__(_RolledBack, _RolledBack(), None)


class Metering:
    """The try's figures (batchq.jobs.history): a failed try's go on the job row (issue 12); a
    success's only into the history, so it is measured only when it is kept."""

    def __init__(self, keeps: Callable[[Job], bool], secret: bytes | None) -> None:
        self._keeps = keeps
        self._secret = secret

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        meter = Meter()
        outcome = call_next(call)
        job = call.job
        if outcome.failure is not None:
            outcome.usage = meter.stop()
        elif outcome.kind == CALLED and self._keeps(job):
            secret = self._secret if job.serializer == "pickle" else None
            outcome.kept = meter.kept(job.id, outcome.result, secret)
        return outcome


class Timeouts:
    """The call under its timeout (batchq.jobs.timeouts): past it, the call is stopped and the try
    fails with the timeout, whatever the call did after."""

    def __init__(self, watchdog: Watchdog, run_timeout: float | None, on_timeout: Callable[[], None]) -> None:
        self._watchdog = watchdog
        self._run_timeout = run_timeout
        self._on_timeout = on_timeout

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        func = call.task.func if call.task is not None else None
        watch = self._watchdog.begin(call.job, job_timeout(call.job, func, self._run_timeout))
        try:
            outcome = call_next(call)
        except JobTimeout as exc:  # raised in a thread just as the task returned (timeouts.py)
            outcome = CallOutcome(exception=exc)
        self._end(watch)  # at once: no JobTimeout is raised past this line
        if watch is not None and watch.expired:
            self._on_timeout()
            error = timed_out_error(watch, outcome.exception)
            outcome.failure = Failure(error, timeout_fingerprint(call.job.task), TIMEOUT_CLASS)
        return outcome

    def _end(self, watch: Watch | None) -> None:
        """Watchdog.end, again if a JobTimeout raised in this thread lands in it first (once:
        end() takes back any still pending)."""
        try:
            self._watchdog.end(watch)
        except JobTimeout:
            self._watchdog.end(watch)


# -- describing a failure -----------------------------------------------------------


def described(exc: BaseException, task: str, for_good: str | None = None) -> Failure:
    """A failure of what ``exc`` says; ``for_good``: why it is not retried, on a line after its
    first (batchq.jobs.control)."""
    error = describe_error(exc)
    if for_good is not None:
        head, _, frames = error.partition("\n")
        error = f"{head}\n(failed for good: {for_good})\n{frames}"[:LAST_ERROR_MAX_CHARS]
    return Failure(error, error_fingerprint(exc, task), class_path(exc))


def timed_out_error(watch: Watch, error: BaseException | None) -> str:
    """last_error of a call that ran past its timeout: where JobTimeout stopped it, or how it
    ended when the timeout did not stop it (a C call, a task that caught JobTimeout)."""
    if isinstance(error, JobTimeout):
        if not error.args:  # raised in a thread, as a class: it says what the signal's says
            error.args = (timed_out(watch.timeout),)
        return describe_error(error)
    text = f"JobTimeout: {timed_out(watch.timeout)}; the task went on past it"
    ending = "then returned" if error is None else f"then raised {describe_error(error)}"
    return f"{text}, {ending}"[:LAST_ERROR_MAX_CHARS]


def describe_error(exc: BaseException) -> str:
    """'Type: message' and the last frames; never raises, whatever the exception's methods do."""
    try:
        frames = "".join(traceback.format_tb(exc.__traceback__)[-5:])
    except BaseException:
        frames = ""
    text = f"{_type_name(exc)}: {_message(exc)}\n{frames}"
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates cannot be stored
    text = text.replace("\x00", "\\x00")  # nor can NUL in PostgreSQL text
    return text[:LAST_ERROR_MAX_CHARS]


def class_path(exc: BaseException) -> str | None:
    """The exception's class as a path, `builtins.ValueError` (job_error's error_class, for
    Queue.result); None if even that cannot be read (a hostile metaclass)."""
    try:
        kind = type(exc)
        path = f"{kind.__module__}.{kind.__qualname__}"
        return path.encode("utf-8", "replace").decode("utf-8").replace("\x00", "")[:CLASS_PATH_MAX_CHARS]
    except BaseException:
        return None


def error_fingerprint(exc: BaseException, task: str) -> str:
    """The failure group of what a task raised; never raises, like describe_error."""
    try:
        return fingerprint(exc, _type_name(exc), _message(exc), task)
    except BaseException:
        return fingerprint_of(_type_name(exc), "")


def _message(exc: BaseException) -> str:
    """str(exc); if its __str__ raises, its repr; if that raises too, say so."""
    try:
        return str(exc)
    except BaseException as str_error:
        problem = _type_name(str_error)
    try:
        return f"{exc!r} (its str() raised {problem})"
    except BaseException:
        return f"(its message could not be read: its str() raised {problem}, and so did its repr())"


def _type_name(exc: BaseException) -> str:
    try:
        return str(type(exc).__name__)
    except BaseException:  # a metaclass can make even this raise
        return "an exception"
