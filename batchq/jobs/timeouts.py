"""Job timeouts: a job that runs past its timeout is stopped and counted as a failure.

Which timeout: the job's own (``enqueue(timeout=...)``, stored on its row), else its task's
(``@task(timeout=...)``, read from the code the worker runs), else ``batchq run --timeout``;
none of them: no limit.

How it is stopped. A watchdog thread watches the job the worker is running. At the timeout it
sends SIGALRM to the worker's main thread, whose handler raises ``JobTimeout`` in the task:
Python code stops there, and so does a call the signal interrupts (``time.sleep``, a socket
wait, an ``async`` task's event loop). A job the signal cannot stop (a C call that retries
after signals or keeps them blocked, a task that swallows ``JobTimeout``) gets a grace period;
past it, the watchdog records the failure (fenced by the job's claim token, as every finish
is), puts back the other jobs of the batch this worker had claimed, and ends the process with
exit status ``WATCHDOG_EXIT_STATUS``: a thread stuck in C code cannot be stopped any other way.
If that record cannot be written in time, the job stays claimed by a dead worker and
``gc-processing`` puts it back, counted as an error, as after any crash.

The processes a timed-out job started (and theirs) are killed once its call has returned, or
before the watchdog ends the process: a retry never runs beside them (see children.py).

A worker run in another thread than the main one (a lane of `run --concurrency`, an app's own
thread) gets no signal: Python delivers them to the main thread only. There the watchdog raises
``JobTimeout`` in the job's thread as an asynchronous exception (``PyThreadState_SetAsyncExc``):
Python code stops there too, but a blocking C call (``time.sleep``, a socket wait) sees it only
when it returns, so a job stuck in one is ended by the grace period and the watchdog.
"""

from __future__ import annotations

import ctypes
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from ..backends import stored_seconds
from ..core.config import MAX_DURATION_SECONDS, format_duration
from ..core.job import Job
from .children import clock_ticks, kill_processes, started_since
from .tasks import task_timeout

log = logging.getLogger("batchq.runtime.worker")

DEFAULT_GRACE_SECONDS = 10.0  # after the timeout, how long a job may take to stop
WATCHDOG_EXIT_STATUS = 4  # `batchq run` ended by its watchdog
RECORD_WAIT_SECONDS = 5.0  # how long the watchdog waits for its record before ending the process
# A job the watchdog gave up on is due again at the earliest this long after: no other worker can
# claim it before this process, and the call stuck in it, are gone.
RETRY_FLOOR_SECONDS = 1.0
RESEND_SECONDS = 0.25  # a signal that landed in batchq's own code, or was blocked, is sent again

# The handler never raises in these files: the worker's bookkeeping around the call must run.
_BATCHQ_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_BOOKKEEPING_FILES = frozenset(
    os.path.join(_BATCHQ_DIR, *path.split("/"))
    for path in ("jobs/timeouts.py", "jobs/calls.py", "runtime/worker.py", "runtime/runner.py")
)


def _not_to_interrupt(filename: str) -> bool:
    """Code JobTimeout must not land in: the worker's bookkeeping around the call, and asyncio's
    own (an event loop cut short in its cleanup would stay marked running, and every later async
    job of this worker would fail). A task's code, and an event loop waiting in select(), may."""
    if filename in _BOOKKEEPING_FILES:
        return True
    asyncio = sys.modules.get("asyncio")  # imported only when a task needed it
    asyncio_file = getattr(asyncio, "__file__", None)
    return asyncio_file is not None and filename.startswith(os.path.dirname(asyncio_file) + os.sep)


class JobTimeout(BaseException):
    """Raised in a task that ran past its timeout. A BaseException, like KeyboardInterrupt, so
    that a task's ``except Exception`` does not swallow it; a task may catch it to clean up."""


def stored_timeout(value: Any) -> float | None:
    """A row's timeout_seconds; None when there is none, or it is no usable timeout (a row
    written by hand: 0, negative, not a number, or over parse_duration's maximum)."""
    if value is None:  # the common case, on every job: no exception raised and caught to say so
        return None
    seconds = stored_seconds(value)
    if seconds is None or not 0 < seconds <= MAX_DURATION_SECONDS:
        return None
    return seconds


def job_timeout(job: Job, func: Callable[..., Any] | None, run_timeout: float | None) -> float | None:
    """The job's own timeout, else its task's, else the run's; None: no limit."""
    own = stored_timeout(job.timeout)
    if own is not None:
        return own
    declared = task_timeout(func)
    return declared if declared is not None else run_timeout


def timeout_text(seconds: float) -> str:
    """30s, 1.5s, 250ms, 2m30s: a timeout as it was likely written."""
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    if seconds < 60:
        return f"{seconds:g}s"
    return format_duration(seconds)


def timed_out(seconds: float) -> str:
    return f"timed out after {timeout_text(seconds)}"


@dataclass(eq=False)
class Watch:
    """One job's run under a timeout (monotonic times); or one handler's call, under `batchq
    consume`, whose ``job`` is then the message."""

    job: Any
    timeout: float
    grace: float
    started: float = field(default_factory=time.monotonic)
    expired: bool = False  # the timeout has passed: the job counts as timed out, however it ends
    raised: bool = False  # JobTimeout was raised in the task
    abandoned: bool = False  # the grace period passed too: the watchdog ends the process
    ticks: int | None = None  # when it began, as /proc counts process starts (None: no /proc)
    # The processes the job had started when it expired (pid -> start): JobTimeout may end the
    # task's own children and leave theirs, which are then no longer below this process.
    processes: dict[int, int] = field(default_factory=dict)
    label: str = ""  # what it is, in log lines: 'job 12 (pkg.mod:func)' unless given
    again: str = "gc-processing will put it back"  # what happens when its failure is not recorded

    @property
    def what(self) -> str:
        return self.label or f"job {self.job.id} ({self.job.task})"

    @property
    def expires_at(self) -> float:
        return self.started + self.timeout

    @property
    def give_up_at(self) -> float:
        return self.expires_at + self.grace


class Watchdog:
    """Enforces the timeout of the job at hand, for the thread that runs jobs (the one that
    made it). ``record`` writes a job's failure (and why it did not stop) when the watchdog gives
    up on it. The thread starts, and the SIGALRM handler is installed, with the first job that
    has a timeout; stop() ends the one and restores the other."""

    def __init__(self, grace: float, record: Callable[[Watch, str], None]) -> None:
        self.grace = grace
        self._record = record
        self._cond = threading.Condition()
        self._watch: Watch | None = None  # the job being timed, for the watchdog thread
        self._active: Watch | None = None  # the same, for the signal handler (which takes no lock)
        self._thread: threading.Thread | None = None
        # When the watchdog thread looks again by itself: a job due to expire later needs no
        # wake-up (a thread switch per job), only one due sooner. Between jobs it sleeps until the
        # last job's expiry: woken for a job already ended, it would otherwise sleep for good, and
        # be woken again by the next job, and the next.
        self._wakes_at = math.inf
        self._last_expiry = -math.inf
        self._stopped = False
        self._signals = threading.current_thread() is threading.main_thread()
        self._job_thread = threading.get_ident()  # elsewhere, JobTimeout is raised in this thread
        self._handler_installed = False
        self._previous_handler: Any = None

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._handler_installed:
            previous = self._previous_handler
            signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
            self._handler_installed = False

    def begin(self, job: Any, timeout: float | None, label: str = "", again: str = "") -> Watch | None:
        """Time a job (or a consumer's message) about to be called (None: it has no timeout)."""
        if timeout is None:
            return None
        if self._signals and not self._handler_installed:  # SIGALRM is left alone until needed
            self._previous_handler = signal.signal(signal.SIGALRM, self._on_alarm)
            self._handler_installed = True
        watch = Watch(job, timeout, self.grace, ticks=clock_ticks(), label=label)
        watch.again = again or watch.again
        with self._cond:
            self._watch = watch
            self._last_expiry = watch.expires_at
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="batchq-watchdog", daemon=True)
                self._thread.start()
            elif watch.expires_at < self._wakes_at:
                self._cond.notify()
        self._active = watch
        return watch

    def end(self, watch: Watch | None) -> None:
        """The call has returned: no JobTimeout is raised from here on. If the watchdog has
        given up on the job meanwhile, wait here for it to end the process."""
        if watch is None:
            return
        self._active = None  # first: the signal handler reads it
        with self._cond:
            self._watch = None
            abandoned = watch.abandoned
        if watch.raised and not self._signals:
            _raise_in_thread(self._job_thread, None)  # one still pending would land past the call
        if abandoned:
            threading.Event().wait()
        if watch.expired:
            _kill_job_processes(watch)

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        watch = self._active
        if watch is None or not watch.expired or watch.raised:
            return  # not ours to act on: a signal sent for a job that has ended since
        if frame is not None and _not_to_interrupt(frame.f_code.co_filename):
            return  # the watchdog sends again while the call goes on
        watch.raised = True
        raise JobTimeout(timed_out(watch.timeout))

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                watch = self._watch
                now = time.monotonic()
                if watch is None:
                    self._sleep_until(self._last_expiry if self._last_expiry > now else math.inf)
                    continue
                if now < watch.expires_at:
                    self._sleep_until(watch.expires_at)
                    continue
                if not watch.expired:  # before JobTimeout can end any of them
                    watch.processes = started_since(watch.ticks)
                watch.expired = True
                if now >= watch.give_up_at:
                    watch.abandoned = True
                    break
                if self._signals and not watch.raised:
                    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGALRM)
                    self._sleep_until(min(now + RESEND_SECONDS, watch.give_up_at))
                elif not watch.raised:
                    self._raise_in_job_thread(watch)
                    self._sleep_until(min(now + RESEND_SECONDS, watch.give_up_at))
                else:
                    self._sleep_until(watch.give_up_at)
            else:
                return
        self._end_process(watch)

    def _raise_in_job_thread(self, watch: Watch) -> None:
        """JobTimeout in the job's thread, unless it runs the worker's bookkeeping now (the
        watchdog looks again). This holds the GIL: the thread cannot move between the look and
        the raise; it sees the exception at its next Python instruction."""
        frame = sys._current_frames().get(self._job_thread)
        if frame is None or _not_to_interrupt(frame.f_code.co_filename):
            return
        watch.raised = True
        _raise_in_thread(self._job_thread, JobTimeout)

    def _sleep_until(self, deadline: float) -> None:
        """Wait (holding the condition) until ``deadline``, or a notify."""
        self._wakes_at = deadline
        self._cond.wait(None if deadline == math.inf else max(deadline - time.monotonic(), 0))
        self._wakes_at = -math.inf  # awake: begin() has nothing to wake

    def _end_process(self, watch: Watch) -> None:
        log.error(
            "%s %s and did not stop within the grace period (%s): recording its failure "
            "and ending this worker process (exit status %d)",
            watch.what,
            timed_out(watch.timeout),
            timeout_text(watch.grace),
            WATCHDOG_EXIT_STATUS,
        )
        _kill_job_processes(watch)  # first: none may run on beside the job's retry
        recorder = threading.Thread(target=self._record_logged, args=(watch,), daemon=True)
        recorder.start()
        recorder.join(RECORD_WAIT_SECONDS)
        if recorder.is_alive():
            log.error("%s: its failure was not recorded in time; %s", watch.what, watch.again)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(WATCHDOG_EXIT_STATUS)

    def _why_not_stopped(self, watch: Watch) -> str:
        if watch.raised and not self._signals:
            return "it caught JobTimeout and went on, or a blocking call has not returned to see it"
        if watch.raised:
            return "it caught JobTimeout and went on"
        if not self._signals:
            return "it runs the worker's own code, where JobTimeout is not raised"
        return "no signal could interrupt it (a blocking call, or signals blocked)"

    def _record_logged(self, watch: Watch) -> None:
        try:
            self._record(watch, self._why_not_stopped(watch))
        except BaseException as exc:
            log.error("%s: its failure could not be recorded (%s); %s", watch.what, exc, watch.again)


def _raise_in_thread(thread_id: int, exc_type: type[BaseException] | None) -> None:
    """Raise ``exc_type`` in the thread at its next Python instruction; None takes back one that
    is still pending."""
    exc = ctypes.py_object(exc_type) if exc_type is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), exc)


def _kill_job_processes(watch: Watch) -> None:
    """Kill what the timed-out job started (found when it expired, or started since)."""
    killed = kill_processes({**watch.processes, **started_since(watch.ticks)})
    if killed:
        log.warning(
            "%s %s: killed %d process(es) it had started (pid %s)",
            watch.what,
            timed_out(watch.timeout),
            len(killed),
            ", ".join(map(str, killed)),
        )
