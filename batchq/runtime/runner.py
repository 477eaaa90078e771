"""What `batchq run` and `batchq consume` share: one runner around a loop that serves.

A runner owns what is the same for every long-running batchq process, whatever it serves:
SIGTERM and SIGINT, its liveness (session lock, lease or pid) and its registry row, the
heartbeat that keeps the idle session alive during a call, the watchdog that stops calls past
their timeout, the backoff when the database connection is lost, and the stop conditions (a
count, a duration, `batchq stop`, a signal). What it runs is a Loop: the job queue's
(worker.py) or the message queue's (consumer.py).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..backends import Backend
from ..core.config import format_duration
from ..errors import BackendError, BackendUnavailable
from ..jobs.heartbeat import STOP_SIGNALS, Heartbeat
from ..jobs.timeouts import Watch, Watchdog
from ..ops.registry import Registration

T = TypeVar("T")

RECONNECT_ATTEMPTS = 8  # backoff 0.2s doubling, capped at 5s: about 16s for a server to come back


class Counts(Protocol):
    """The run's summary as the runner reads and counts it."""

    reconnects: int

    @property
    def processed(self) -> int: ...


class Loop(Protocol):
    """What a runner runs: the job queue's loop or the message queue's."""

    def prepare(self) -> None:
        """Checks and set-up before the process shows alive."""

    def loop(self) -> None:
        """Serve until the runner's should_stop() says so (or the loop is done)."""

    def close(self) -> None:
        """On the way out, before the process shows gone."""

    def record_abandoned(self, watch: Watch, why_not_stopped: str) -> None:
        """The watchdog's last act before it ends the process (in its thread)."""


@dataclass(frozen=True)
class Limits:
    max_count: int | None = None  # stop once the summary's processed reaches it
    max_seconds: float | None = None  # stop once the loop has run this long


def reconnect_delay(attempt: int) -> float:
    """Seconds to wait before reconnecting after the ``attempt``-th loss in a row (from 0)."""
    return min(0.2 * 2**attempt, 5.0)


class Runner:
    def __init__(
        self,
        backend: Backend,
        registration: Registration,
        counts: Counts,
        limits: Limits,
        *,
        grace: float,
        heartbeat: float | None,
        log: logging.Logger,
    ) -> None:
        self.backend = backend
        self.name = registration.name
        self.stopped = threading.Event()  # set by stop(): finish the call at hand, then exit
        self.started = time.monotonic()
        self.watchdog: Watchdog | None = None  # made by run(), in the thread that makes the calls
        self.heartbeat: Heartbeat | None = None  # made by run() when a heartbeat is asked for
        self._registration = registration
        self._counts = counts
        self._limits = limits
        self._grace = grace
        self._heartbeat_seconds = heartbeat
        self._log = log

    def stop(self, *_: Any) -> None:
        """Finish the call at hand, then exit (SIGTERM, SIGINT, `batchq stop`)."""
        self.stopped.set()

    def run(self, loop: Loop) -> None:
        with stop_on_signals(self.stop):
            loop.prepare()
            self.backend.hold_liveness(self.name)
            self._registration.register()
            if self._heartbeat_seconds is not None:
                self.heartbeat = Heartbeat(self.backend, self._heartbeat_seconds)
                self.heartbeat.start()
            self.watchdog = Watchdog(self._grace, loop.record_abandoned)
            self.started = time.monotonic()
            try:
                loop.loop()
            finally:
                self.watchdog.stop()
                if self.heartbeat is not None:
                    self.heartbeat.stop()
                loop.close()
                self._unregister()
                self._end_liveness()

    def _unregister(self) -> None:
        """On the way out: the registry row goes (a sweep prunes it, should this fail)."""
        try:
            self._registration.unregister()
        except BackendError as exc:
            self._log.warning("could not remove this process from the registry: %s", exc)

    def _end_liveness(self) -> None:
        """On the way out: a lease goes now (a session's lock goes with the connection)."""
        try:
            self.backend.liveness.release()
        except BackendError as exc:  # it expires by itself
            self._log.warning("could not drop this process's lease: %s", exc)

    # -- stop conditions ------------------------------------------------------------

    def should_stop(self) -> bool:
        if self.stopped.is_set():
            return True
        limits = self._limits
        if limits.max_count is not None and self._counts.processed >= limits.max_count:
            return True
        return limits.max_seconds is not None and self.elapsed() >= limits.max_seconds

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def asked_to_stop(self, done: int, failed: int) -> bool:
        """Refresh the registry row with the counts; when `batchq stop` asked this process to
        stop, say so and stop (the call at hand finishes)."""
        if not self._registration.seen(done, failed):
            return False
        self._log.info("asked to stop (batchq stop): exiting")
        self.stop()
        return True

    # -- connection loss ------------------------------------------------------------

    def with_reconnect(
        self,
        action: Callable[[], T],
        on_lost: Callable[[], None] | None = None,
        backend: Backend | None = None,
    ) -> T:
        """Run a statement on ``backend`` (the runner's own unless given: a lane's, batchq.runtime.
        lanes); if the connection is lost, wait and retry on a new connection (``on_lost``
        first), RECONNECT_ATTEMPTS times in all. The runner's backend re-takes the liveness on
        every connect; the caller fences what a retry after an unseen commit would redo."""
        backend = backend or self.backend
        for attempt in range(RECONNECT_ATTEMPTS):
            try:
                return backend.retrying(action)
            except BackendUnavailable as exc:
                if attempt == RECONNECT_ATTEMPTS - 1:
                    raise
                if on_lost is not None:
                    on_lost()
                self.reconnect_wait(exc, attempt)
        raise AssertionError("unreachable")

    def reconnect_wait(self, exc: BackendUnavailable, attempt: int, interruptible: bool = False) -> None:
        """Count and log the ``attempt``-th connection loss in a row (from 0), then back off;
        ``interruptible``: a stop cuts the wait short."""
        self._counts.reconnects += 1
        delay = reconnect_delay(attempt)
        self._log.warning("database connection lost (%s); reconnecting in %s", exc, format_duration(delay))
        if interruptible:
            self.stopped.wait(delay)
        else:
            time.sleep(delay)


@contextmanager
def stop_on_signals(handler: Callable[..., Any]) -> Iterator[None]:
    """SIGTERM and SIGINT call ``handler`` meanwhile (in the main thread; elsewhere, nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
