"""The worker registry: which workers run, what they serve and do, and asking them to stop.

Every `batchq run` writes a row when it starts (``batchq_worker``), refreshes it about once a
second with its counts (at the worker's tick, never per job), reads there whether `batchq stop`
asked it to stop, and deletes it when it exits. The job a worker runs is not written here: it is
the worker's own 'processing' row of ``batchq_job``, joined in when the registry is listed.

A worker that died without deleting its row is shown as gone once its liveness says so (the
session lock or process that gc-processing asks), and its row is pruned by gc-processing once
it has not been seen for PRUNE_AFTER_SECONDS. Starting workers is cron's or systemd's job.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.config import check_queue_name
from ..stores.workers import WorkerInfo, WorkerRow

if TYPE_CHECKING:
    from ..backends import Backend

log = logging.getLogger("batchq.ops.registry")

PRUNE_AFTER_SECONDS = 3600.0  # a gone worker's row stays this long after it was last seen


class Registration:
    """A worker's own row: written at start, refreshed at each tick, deleted at exit."""

    def __init__(
        self,
        backend: Backend,
        name: str,
        serves: Sequence[str],
        kind: str = "run",
        heartbeat: float | None = None,
    ) -> None:
        self.backend = backend
        self.store = backend.stores.workers
        self.name = name
        self._row = WorkerRow(name, socket.gethostname(), os.getpid(), kind, list(serves), heartbeat)

    def register(self) -> None:
        self.store.register(self._row)

    def seen(self, done: int, failed: int) -> bool:
        """Refresh the row; True when `batchq stop` asked this worker to stop. A row pruned by
        mistake (a sweep that could not see this worker's liveness) is written again."""
        if self.store.seen(self.name, done, failed):
            return False
        asked = self.store.stop_asked(self.name)
        if asked is None:
            self.register()
            return False
        return asked

    def unregister(self) -> None:
        self.store.unregister(self.name)


def registered_heartbeat(backend: Backend, name: str) -> float | None:
    """The seconds between a worker's session pings as it registered them (0: it does not ping);
    None for a worker not registered, or registered by an older batchq."""
    return backend.stores.workers.heartbeat(name)


def list_workers(backend: Backend) -> list[WorkerInfo]:
    """Every registered worker, with its state as its liveness tells it."""
    return backend.stores.workers.all()


def request_stop(
    backend: Backend, *, host: str | None = None, queue: str | None = None, name: str | None = None
) -> int:
    """Ask the matching workers (every one without a filter) to finish the job at hand and
    exit; they see it within about a second of their next tick. Returns how many were asked:
    a worker whose liveness says it died is not (its row stays until gc-processing prunes it)."""
    store = backend.stores.workers
    names = store.matching(host, None if queue is None else check_queue_name(queue), name)
    there = [name for name in names if backend.liveness.is_alive(name) is not False]  # None: another host
    # Counted by rows found (FOUND_ROWS on MySQL): a worker asked twice is counted; one that
    # exited since it was listed is not.
    return sum(store.stop(name) for name in there)


def prune_gone(backend: Backend, older_than: float = PRUNE_AFTER_SECONDS) -> int:
    """Delete the rows of workers that are gone and were last seen ``older_than`` seconds ago."""
    pruned = 0
    for info in list_workers(backend):
        if info.state == "gone" and info.seen_seconds_ago >= older_than:
            pruned += backend.stores.workers.unregister(info.name)
    return pruned
