"""A running task's progress: a fraction done and a short message (``batchq.progress``).

A task calls ``batchq.progress(0.4, "resized 400 of 1000 images")`` as often as it likes. In a
worker (`batchq run`, ``drain()``), the Reporting middleware writes the report on the job's row
(``progress``, ``progress_message``, ``progress_at``: migration 024), where `batchq explain`,
the dashboard's job page and `batchq status --json` read it. What it costs and what it cannot do:

- Throttled: at most one write per job every WRITE_INTERVAL_SECONDS. A report that comes sooner
  is held; the next report past the interval writes the latest one, and when the try fails the
  one still held is written as the call ends (the row stays: an operator sees how far it got).
  When the try succeeds a held report is dropped: the row is deleted with the finish.
  A report equal to the last one written writes nothing.
- Fenced: the write matches only while the try holds its claim (its claim token), so a job
  `gc-processing` took back is never given a late report by the worker it was taken from; once
  one write matches nothing, the try writes no more.
- Best effort: a report that cannot be written (the connection lost, the schema behind) is
  logged, never raised into the task; the worker's own next statement reconnects as usual.
- On the worker's own connection (one session per worker, no more), with SIGALRM held off
  during the write so that a job's timeout never cuts a statement in half (batchq.jobs.timeouts);
  the timeout then lands just after it.
- Only the task's own thread, or a thread started in its context (``contextvars.copy_context``),
  reports: elsewhere ``progress()`` has no job to report for and only checks its arguments.
  A report from a thread still running after its call ended is dropped.

Outside a worker (a plain call, a unit test) ``progress()`` checks its arguments and does
nothing else. Under ``batchq.testing.inline()`` and ``drain()`` the reports are also kept in
memory, the last REPORTS_KEPT of them, unthrottled, on the job's Outcome (``outcome.progress``).
"""

from __future__ import annotations

import logging
import math
import numbers
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, NamedTuple, Protocol

from ..core.job import Job, current_job
from ..core.stored import clean_message
from ..errors import BackendError, ConfigError, SchemaMissing

log = logging.getLogger("batchq.runtime.worker")

WRITE_INTERVAL_SECONDS = 1.0  # at most one write per job this often
REPORTS_KEPT = 1000  # reports kept in memory per call, for the test helpers (the latest ones)


class Report(NamedTuple):
    """One call of ``batchq.progress``, as checked: a fraction in [0, 1] and a printable message
    of at most PROGRESS_MESSAGE_MAX_CHARS characters."""

    fraction: float
    message: str


def progress(fraction: float, message: str = "") -> None:
    """Report how far the running job has got: ``fraction`` done, from 0 to 1, and a short
    ``message`` (cut to 200 characters; what is not printable becomes a space).

    Raises ConfigError for a fraction that is no finite number from 0 to 1, or a message that
    is not a string, wherever it is called. Never raises for the database: see batchq.jobs.reporting.
    """
    report = checked_report(fraction, message)
    sink = _sink.get()
    if sink is not None:
        sink.report(report)


def checked_report(fraction: Any, message: Any) -> Report:
    """The report as stored, or ConfigError saying what is wrong with it."""
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise ConfigError(f"bad progress {fraction!r}: use a number from 0 to 1")
    try:
        value = float(fraction)
    except (OverflowError, ValueError, TypeError):
        value = math.nan
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ConfigError(f"bad progress {fraction!r}: use a number from 0 to 1 (0.25 is a quarter done)")
    if not isinstance(message, str):
        raise ConfigError(f"bad progress message {type(message).__name__}: use a string")
    return Report(value, clean_message(message))


# -- in a call ------------------------------------------------------------------------------


class Tracker:
    """The reports of one call: kept in memory, and handed to ``write`` (None: nowhere) at most
    once per ``interval`` seconds. Thread-safe: a task may report from threads it started."""

    __slots__ = (
        "_write",
        "_interval",
        "_lock",
        "reports",
        "written",
        "held",
        "_next_write",
        "_ended",
        "_fenced",
    )

    def __init__(
        self, write: Callable[[Report], bool] | None, interval: float = WRITE_INTERVAL_SECONDS
    ) -> None:
        self._write = write
        self._interval = interval
        self._lock = threading.Lock()
        self.reports: deque[Report] = deque(maxlen=REPORTS_KEPT)
        self.written: Report | None = None  # the last report written
        self.held: Report | None = None  # a newer report the throttle held back
        self._next_write = 0.0  # monotonic time from which the next write may go
        self._ended = False  # the call has ended: later reports (a leftover thread's) are dropped
        self._fenced = False  # a write matched nothing: the job is no longer this try's

    def report(self, report: Report) -> None:
        with self._lock:
            if self._ended:
                return
            self.reports.append(report)
            if self._write is None or self._fenced:
                return
            if report == self.written:
                self.held = None
                return
            now = time.monotonic()
            if now < self._next_write:
                self.held = report
                return
            self._send(report, now)

    def end(self, failed: bool) -> None:
        """The call is over: a held report is written when the try failed (the row stays)."""
        with self._lock:
            self._ended = True
            held, self.held = self.held, None
            if failed and held is not None and self._write is not None and not self._fenced:
                self._send(held, time.monotonic())

    def _send(self, report: Report, now: float) -> None:
        assert self._write is not None
        self.held = None
        self._next_write = now + self._interval
        if self._write(report):
            self.written = report
        else:
            self._fenced = True


class Sink(Protocol):
    """Where the reports of the calls in a context go: a Tracker, or a worker's Reporting."""

    def report(self, report: Report) -> None: ...


# Set by tracking() around a block, or once per worker thread by its Reporting: not per job (a
# ContextVar set and reset and a Tracker made for every job cost several microseconds a job).
_sink: ContextVar[Sink | None] = ContextVar("batchq_progress", default=None)


@contextmanager
def tracking(tracker: Tracker) -> Iterator[Tracker]:
    """Reports made in the block (and in what it runs) go to ``tracker``."""
    token = _sink.set(tracker)
    try:
        yield tracker
    finally:
        _sink.reset(token)


# -- the worker's middleware --------------------------------------------------------------


class Reporting:
    """Middleware (batchq.jobs.calls): the call's reports written on its job's row, throttled and
    fenced by the claim token; what the call reported left on its outcome (``progress``).

    A job that reports nothing costs it a few attribute writes (about a microsecond a job, timed
    on a loaded machine): the call's Tracker is made at its first report."""

    def __init__(self, backend: Any, interval: float | None = None) -> None:
        self._backend = backend
        self._interval = WRITE_INTERVAL_SECONDS if interval is None else interval
        self._lock = threading.Lock()  # a task's threads may report at once
        self._job: Job | None = None  # the job being called
        self._tracker: tuple[Job, Tracker] | None = None  # its reports, from the first one

    def __call__(self, call: Any, call_next: Callable[[Any], Any]) -> Any:
        if _sink.get() is not self:  # the worker's first job in this thread: from then on
            _sink.set(self)
        self._tracker = None  # one a thread of the last call's made as it ended: not this call's
        self._job = call.job
        try:
            outcome = call_next(call)
        finally:
            self._job = None  # from here, no report makes a tracker for this call
        made = self._tracker
        if made is not None and made[0] is call.job:  # not a late thread's of an earlier call
            tracker = made[1]
            tracker.end(failed=outcome.failure is not None)
            outcome.progress = tuple(tracker.reports)
        return outcome

    def report(self, report: Report) -> None:
        """A report of the running job's task; one from a thread whose job's call has ended
        (its context names another job, or none) is dropped."""
        job = current_job()
        with self._lock:
            if job is None or job is not self._job:
                return
            made = self._tracker
            if made is None or made[0] is not job:
                made = self._tracker = (job, Tracker(partial(self._write, job), self._interval))
        made[1].report(report)

    def _write(self, job: Job, report: Report) -> bool:
        """One report on the job's row; False when it matched nothing (taken back) or the schema
        lacks the columns: the call writes no more. Another database error is logged and counts
        as written: the next report tries again."""
        backend = self._backend
        if not backend.connected:  # lost: the worker's own next statement reconnects, not a report
            return True
        try:
            with _alarm_held():
                matched = backend.stores.jobs.progress(
                    job.id, job.claim_token, report.fraction, report.message
                )
        except SchemaMissing as exc:  # at migration 023: no more tries for this call
            log.warning("job %s: its progress is not recorded: %s", job.id, exc)
            return False
        except BackendError as exc:
            log.warning("job %s: its progress could not be written: %s", job.id, exc)
            return True
        if matched == 0:
            log.warning(
                "job %s was taken back by gc-processing while it ran: its progress is no longer recorded",
                job.id,
            )
            return False
        return True


@contextmanager
def _alarm_held() -> Iterator[None]:
    """SIGALRM (a job's timeout, batchq.jobs.timeouts) held off in the main thread for the block: a
    statement cut in half would leave the worker's connection out of step with the server. The
    watchdog sends it to the main thread alone, and sends it again if it did not land."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
