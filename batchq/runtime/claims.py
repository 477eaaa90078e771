"""How a `batchq run` worker gets its next jobs, and what rides with the claim: the DELETE of the
jobs that just succeeded (one commit per job instead of two), with those its history keeps.

Three ways to claim, chosen per queue: by row (the default), within a leased partition (`run
--claim partition`, batchq.coordination.partitions), and through the limited claim for queues
with flow limits (batchq.policy.flow). The worker (batchq.runtime.worker) decides when to claim
and what to call; this module, which rows.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from ..backends import Backend, OnDatabase, TransientError
from ..coordination.partitions import PartitionLease, check_partitions_ready
from ..core.job import Claim, Job, Kept
from ..errors import BackendError, BackendUnavailable, ConfigError
from ..jobs.history import KEPT_STATEMENT_BYTES
from ..policy.flow import QueueLimits

log = logging.getLogger(__name__)

PARTITION_TRIES = 3  # partitions a claim tries before the worker counts as idle
# The shortest sleep of a worker held back by a rate limit: a start allowed "now" on the
# database's clock (its times are rounded to the millisecond on SQLite) is never a busy loop.
HELD_PAUSE_MIN_SECONDS = 0.005
# Its longest: the sleep is cut into pieces so that the worker still ticks (`batchq stop`, due
# scheduled jobs) and keeps to --max-seconds while a rate of, say, 100/h holds it back.
HELD_PAUSE_MAX_SECONDS = 5.0


class KeptJobs:
    """The succeeded jobs to copy into the history as they go (`run --keep`, a queue's keep_for,
    a job's keep_result), with their measurements, until the claim or DELETE that finishes them."""

    def __init__(self, db: OnDatabase, keep_all: bool) -> None:
        self.db = db
        self.keep_all = keep_all
        self.queues: set[str] = set()  # queues with a keep_for when last looked (the tick)
        self.kept: dict[int, Kept] = {}

    @property
    def backend(self) -> Backend:
        """The connection of the thread that runs the worker, asked at each use."""
        return self.db.backend

    def keeps(self, job: Job) -> bool:
        """Is the job copied into the history when it ends: by `run --keep`, its queue's
        keep_for, or its own keep_result (enqueue's or its task's: batchq.jobs.results)?"""
        return self.keep_all or job.keep_result is not None or job.queue in self.queues

    def add(self, job: Job, kept: Kept) -> None:
        self.kept[job.id] = kept

    def clear(self) -> None:
        self.kept.clear()

    def any_of(self, done: Sequence[Job]) -> bool:
        return any(job.id in self.kept for job in done)

    def of(self, done: Sequence[Job]) -> list[Kept] | None:
        """The finished jobs to keep, with their measurements, for the claim; None when none is
        kept (the claim is then exactly what it is without history)."""
        if not self.kept:
            return None
        found = [self.kept[job.id] for job in done if job.id in self.kept]
        return found or None

    def size(self, done: Sequence[Job]) -> int:
        if not self.kept:
            return 0
        return sum(self.kept[job.id].size for job in done if job.id in self.kept)

    def delete(self, done: list[Job]) -> int:
        """Delete finished jobs with no claim (keeping those to keep), in pieces whose
        measurements stay under KEPT_STATEMENT_BYTES; each piece is its own transaction (none
        at all: no statement)."""
        if not done:
            return 0
        store = self.backend.stores.jobs
        if not self.kept:
            return store.delete_jobs(done)
        deleted, size, piece = 0, 0, list[Job]()
        for job in done:
            job_size = self.kept[job.id].size if job.id in self.kept else 0
            if piece and size + job_size > KEPT_STATEMENT_BYTES:
                deleted += store.delete_jobs(piece, self.of(piece))
                piece, size = [], 0
            piece.append(job)
            size += job_size
        return deleted + store.delete_jobs(piece, self.of(piece))


class Claims:
    """A worker's claims: each call to ``next`` deletes ``done`` (the jobs that just succeeded)
    and claims up to ``limit`` jobs of the first of ``queues`` that has any."""

    def __init__(self, db: OnDatabase, owner: str, kept: KeptJobs) -> None:
        self.db = db
        self.owner = owner
        self.kept = kept
        self.limited: dict[str, QueueLimits] = {}  # queues with flow limits when last looked
        self.held: dict[str, float | None] = {}  # queues whose limits held due jobs back: the wait
        self.lease: PartitionLease | None = None  # with `run --claim partition`
        self.waiting_for_partition = False  # no free partition has work, but leased ones do
        # The tokens of claims sent since the last one seen to end: a claim lost with its
        # connection may have committed, and only its token may put it back (the other lanes of
        # a `run --concurrency` process claim under the same owner).
        self.unseen: list[str] = []

    @property
    def backend(self) -> Backend:
        """The connection of the thread that runs the worker, asked at each use."""
        return self.db.backend

    def next(self, queues: list[str], limit: int, done: list[Job]) -> tuple[int, list[Job]]:
        """(finished jobs deleted, jobs claimed)."""
        self.held = {}
        if self.lease is not None:
            found = self._in_partitions(queues, limit, done)
        else:
            found = self._by_row(queues, limit, done)
        self.unseen.clear()
        return found

    def _token(self) -> str:
        """A new claim's token, noted as unseen until its claim returns."""
        token = os.urandom(16).hex()
        self.unseen.append(token)
        return token

    def held_pause(
        self, active_queues: int, poll_interval: float, seconds_left: float | None
    ) -> float | None:
        """After a claim that found nothing: None if no flow limit held due jobs back; else how
        long to wait before claiming again: until the rate allows a start, when rates hold
        every queue of this worker; else the poll interval (a running limit frees a place when a
        job ends, which no one can tell in advance; and other queues may get jobs)."""
        if not self.held:
            return None
        waits = [wait for wait in self.held.values() if wait is not None]
        pause = min(waits) if len(waits) == len(self.held) else poll_interval
        if len(self.held) < active_queues:
            pause = min(pause, poll_interval)
        pause = min(pause, HELD_PAUSE_MAX_SECONDS)
        if seconds_left is not None:
            pause = min(pause, seconds_left)
        return max(pause, HELD_PAUSE_MIN_SECONDS)

    def _by_row(self, queues: list[str], limit: int, done: list[Job]) -> tuple[int, list[Job]]:
        """The row claim (the default): the first of ``queues`` with a due job."""
        deleted = 0
        for queue_name in queues:
            if queue_name in self.limited:
                deleted, done = deleted + self.kept.delete(done), []
                jobs = self._limited(queue_name, limit)
                if jobs:
                    return deleted, jobs
                continue
            claim = self.backend.stores.jobs.claim(
                queue_name, self.owner, self._token(), limit, done, kept=self.kept.of(done)
            )
            deleted, done = deleted + claim.deleted, []
            if claim.jobs:
                return deleted, claim.jobs
        return deleted + self.kept.delete(done), []  # every queue is paused: the finished jobs still go

    def _in_partitions(self, queues: list[str], limit: int, done: list[Job]) -> tuple[int, list[Job]]:
        """Claim within the leased partition; one that comes back empty is given up for another
        holding due jobs (a few tries: its jobs may all be in other claims right now)."""
        assert self.lease is not None
        lease, deleted = self.lease, 0
        self.waiting_for_partition = False
        if self.kept.any_of(done):  # kept first: claims here keep nothing
            deleted, done = self.kept.delete(done), []
        partition = lease.current(queues)
        for _ in range(PARTITION_TRIES):
            if partition is None:
                break
            for queue_name in queues:
                if queue_name in self.limited:  # by row, through the limited claim
                    deleted, done = deleted + self.kept.delete(done), []
                    jobs = self._limited(queue_name, limit)
                    if jobs:
                        return deleted, jobs
                    continue
                claim = self._partition_claim(queue_name, limit, done, partition)
                if claim is None:  # switched off: nothing of that claim happened, `done` included
                    return self._by_row_from_now(queues, limit, done, deleted)
                deleted, done = deleted + claim.deleted, []
                if claim.jobs:
                    lease.claimed(len(claim.jobs))
                    return deleted, claim.jobs
            partition = lease.exhausted(queues)
        if partition is None and queues and not self._partitions_on():
            return self._by_row_from_now(queues, limit, done, deleted)  # no partition left to lease
        deleted += self.kept.delete(done)
        self.waiting_for_partition = lease.work_elsewhere(queues)
        return deleted, []

    def _limited(self, queue_name: str, limit: int) -> list[Job]:
        """The limited claim of a queue with flow limits (batchq.policy.flow): the finished jobs went
        first, in their own transaction, so that they no longer count as running."""
        found = self.backend.stores.flow.claim(queue_name, self.owner, self._token(), limit)
        if found.held:
            self.held[queue_name] = found.wait
        return found.jobs

    def _partition_claim(self, queue_name: str, limit: int, done: list[Job], partition: int) -> Claim | None:
        """One claim within ``partition``; None when it failed because `batchq partitions set 0`
        switched partitioned claims off (its index is gone: SQLite's INDEXED BY and MySQL's FORCE
        INDEX refuse to run). The failed claim rolled back whole, its finished jobs' DELETE too."""
        for attempt in range(2):
            try:
                token = self._token()
                return self.backend.stores.jobs.claim(
                    queue_name, self.owner, token, limit, done, partition=partition
                )
            except (BackendUnavailable, TransientError):
                raise  # the connection, a deadlock: _with_reconnect and retrying handle those
            except BackendError as exc:
                if not self._partitions_on():
                    log.debug("partition claim failed as partitions were switched off: %s", exc)
                    return None
                if attempt:
                    raise
                # Set up again: `partitions set 0` then `set N` rebuilt the index in between.
        raise AssertionError("unreachable")

    def _partitions_on(self) -> bool:
        """Are partitioned claims still set up (partitions, and the index their claims walk)?"""
        try:
            check_partitions_ready(self.backend)
        except ConfigError:
            return False
        return True

    def _by_row_from_now(
        self, queues: list[str], limit: int, done: list[Job], deleted: int
    ) -> tuple[int, list[Job]]:
        """Partitioned claims were switched off under this worker: it gives its lease up and
        claims by row from now on (what every worker does when partitions are off), so that it
        finishes its jobs and drains the queue rather than fail mid-job or idle out."""
        log.warning("partitioned claims were switched off (`batchq partitions set 0`): claiming by row")
        lease, self.lease = self.lease, None
        self.waiting_for_partition = False
        if lease is not None:
            lease.partition = None  # its row went with the partitions: nothing to release
        more, jobs = self._by_row(queues, limit, done)
        return deleted + more, jobs
