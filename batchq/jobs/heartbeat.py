"""The worker's heartbeat: its database session never sits idle for long while a job runs.

A job leaves the worker's connection idle. Servers and proxies cut idle sessions (MySQL
``wait_timeout``, PostgreSQL ``idle_session_timeout``, a load balancer's idle timeout), which
frees the liveness lock and lets ``gc-processing`` put a running job back. The worker raises
the server's limits on its session where it may; the heartbeat covers the rest, and lets
``gc-processing --ghost-after`` tell a session whose worker is gone: it alone sits idle.
"""

from __future__ import annotations

import signal
import threading

from ..backends import Backend

# What stops a worker: the main thread's to handle (batchq.runtime.runner.stop_on_signals).
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


def leave_stop_signals_to_main_thread() -> None:
    """A helper thread's first call (the heartbeat, a lane): SIGTERM and SIGINT then go to the
    main thread, whose wait they cut short, so that Python runs their handler at once; left to
    the kernel's choice of thread, the handler would wait for the main thread's next tick. Not on
    Windows, which has no per-thread signal mask."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


DEFAULT_HEARTBEAT_SECONDS = 30.0


class Heartbeat:
    """One daemon thread per worker that pings the worker's own connection every ``interval``
    seconds while ``in_job`` is set. Setting the flag costs the job loop nothing; the backend's
    session lock keeps the ping and the worker's own statements apart."""

    def __init__(self, backend: Backend, interval: float) -> None:
        self.backend = backend
        # A lease must be renewed during a job whatever the option says: switched off (0) or
        # slower than a third of the lease, it beats at that third.
        beat = backend.liveness.beat_seconds
        self.interval = min(interval if interval > 0 else beat, beat)
        self.in_job = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.interval <= 0 or self.interval == float("inf") or not self.backend.has_sessions:
            return  # switched off, or nothing to keep alive (SQLite)
        self._thread = threading.Thread(target=self._beat, name="batchq-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _beat(self) -> None:
        leave_stop_signals_to_main_thread()
        while not self._stop.wait(self.interval):
            if self.in_job:
                self.backend.liveness.ping()
