"""`batchq run --concurrency N`: up to N jobs at once in one process, each in a lane.

A lane is a thread that claims, calls and finishes jobs exactly as a single worker does (its own
connection, its own claims and claim tokens, its own timeouts' watchdog; batchq.runtime.worker),
under the process's one name. What stays one per process is kept by the main thread: the
signals, the liveness (the session lock or lease named after the worker, which covers every
lane's claims: a SIGKILL's jobs all come back through gc-processing), the registry row, the
heartbeat and `batchq stop`. So a process holds N + 1 connections: one per lane, and its own.

Threads, for plain and ``async def`` tasks alike (each lane runs an async task with
asyncio.run, as a single worker does): a job keeps every guarantee it has in a single worker (its
timeout raised in its own thread, its CPU time measured by thread), and a task that blocks
holds up no other job. The GIL makes lanes worth it for jobs that wait (I/O), not for jobs that
compute: for those, run more processes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from ..core.job import Job, Kept
from ..jobs.heartbeat import leave_stop_signals_to_main_thread

log = logging.getLogger("batchq.runtime.worker")

MAX_CONCURRENCY = 256  # lanes per process: each holds a thread and a connection


class InHand(NamedTuple):
    """A lane's claimed jobs not yet finished, and those done but not yet deleted, with their
    history entries (what the watchdog settles before it ends the process)."""

    unfinished: list[Job]
    done: list[Job]
    kept: list[Kept] | None


class Lane(Protocol):
    summary: Any  # batchq.runtime.worker.RunSummary

    def loop(self) -> None: ...
    def in_hand(self) -> InHand: ...


class Sights(NamedTuple):
    """What a worker's tick learns of its queues (batchq.runtime.worker.Worker._tick)."""

    paused: set[str]  # the queues paused
    keeping: set[str]  # the queues that keep their jobs' history
    limited: dict[str, Any]  # the queues with flow limits, and the limits (batchq.policy.flow)


class Ticks:
    """The lanes' tick, one for the process: the lane whose turn it is runs the tick's
    statements on its connection, at most once an ``interval``, and every lane takes what it
    learned (N lanes would otherwise promote, expire and read the queues' settings N times)."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._lock = threading.Lock()
        self._next = 0.0
        self._seen: Sights | None = None

    def run(self, look: Callable[[], tuple[Sights, int]]) -> tuple[Sights, int]:
        """(what the latest tick learned, how many jobs this call made ready: 0 when it only
        took another lane's look)."""
        with self._lock:  # the others wait for the look under way, then take it
            now = time.monotonic()
            if self._seen is not None and now < self._next:
                return self._seen, 0
            self._seen, ready = look()
            self._next = now + self._interval
            return self._seen, ready


class Budget:
    """`run --max-jobs` shared by the lanes: a claim takes its jobs from it first, and gives back
    what it did not get or did not run, so that the process never claims more jobs than
    allowed (None: no limit)."""

    def __init__(self, jobs: int | None) -> None:
        self._left = jobs
        self._lock = threading.Lock()

    def take(self, wanted: int) -> int:
        with self._lock:
            if self._left is None:
                return wanted
            taken = max(min(wanted, self._left), 0)
            self._left -= taken
            return taken

    def give_back(self, count: int) -> None:
        if count <= 0:
            return
        with self._lock:
            if self._left is not None:
                self._left += count

    @property
    def spent(self) -> bool:
        return self._left is not None and self._left <= 0


class Crew:
    """The lanes of one process: started together, each in its thread; the first that fails
    stops the others, which finish the jobs in their hands, and its error is raised here."""

    def __init__(self, size: int, make_lane: Callable[[], Lane], stop: Callable[[], None]) -> None:
        self._size = size
        self._make_lane = make_lane
        self._stop = stop
        self.lanes: list[Lane] = []
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []

    def run(self, tick: Callable[[], None], tick_seconds: float) -> None:
        """Run the lanes until they all end, calling ``tick`` about every ``tick_seconds`` meanwhile
        (in this thread: what is one per process)."""
        self.lanes = [self._make_lane() for _ in range(self._size)]
        for number, lane in enumerate(self.lanes, 1):
            thread = threading.Thread(target=self._serve, args=(lane,), name=f"batchq-lane-{number}")
            self._threads.append(thread)
            thread.start()
        try:
            while alive := [thread for thread in self._threads if thread.is_alive()]:
                alive[0].join(tick_seconds)
                if not self._errors:
                    tick()
        except BaseException:  # this thread's own statements: the lanes finish, then it raises
            self._stop()
            for thread in self._threads:
                thread.join()
            raise
        if self._errors:
            raise self._errors[0]

    def _serve(self, lane: Lane) -> None:
        leave_stop_signals_to_main_thread()  # its join cut short, no lane claims after SIGTERM
        try:
            lane.loop()
        except BaseException as exc:
            log.error("%s failed: %s; stopping the other lanes", threading.current_thread().name, exc)
            self._errors.append(exc)
            self._stop()

    def others_in_hand(self, but: Lane) -> list[InHand]:
        """What the other lanes hold, for the watchdog's last act (Worker.record_abandoned)."""
        return [lane.in_hand() for lane in self.lanes if lane is not but]
