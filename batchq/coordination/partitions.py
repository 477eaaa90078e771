"""Partitioned claims (seed 003's block locks): `batchq run --claim partition`.

Each job gets a random partition number at insert. A worker leases one partition at a time from
``batchq_partition`` (the least recently used free one that holds a due job of its queues),
claims only that partition's jobs, and after ``jobs_per_lease`` jobs releases it and leases
another. Workers in different partitions never touch each other's rows, so on servers where row
claims contend (MySQL < 8.0.1 and MariaDB < 10.6 have no SKIP LOCKED: claimers queue behind each
other's row locks) they stop waiting for each other.

The lease only spreads workers out; it never decides who runs a job. Claims still lock and mark
their rows exactly as row claims do, so a lease that ran out mid-drain, or a row-claiming worker
beside partitioned ones, costs waiting, never a job run twice. A worker that dies holding a
partition loses it when its lease expires, or at once when a worker finding no free partition
sees (liveness, as gc-processing asks) that it is dead; its claimed job comes back through
gc-processing, as any dead worker's.

The number of partitions is set with `batchq partitions set N`, which also builds the index
partitioned claims walk (row claims, the default, pay nothing for it). Producers read the number
at most once a minute; jobs they still place in a partition that no longer exists are moved by
the workers (jobs_repartition).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..stores.partitions import REPARTITION_BATCH, PartitionInfo

if TYPE_CHECKING:
    from ..backends import Backend

DEFAULT_PARTITIONS = 16
MAX_PARTITIONS = 1024
DEFAULT_JOBS_PER_LEASE = 100  # the seed's "a certain number": larger is less lease traffic, less fair
DEFAULT_LEASE_SECONDS = 30.0
COUNT_CACHE_SECONDS = 60.0  # how stale a producer's partition count may be


def partition_count(backend: Backend, conn: Any = None) -> int:
    """How many partitions jobs are spread over (0: partitioned claims are not set up)."""
    return backend.stores.partitions.count(conn)


def list_partitions(backend: Backend) -> list[PartitionInfo]:
    return backend.stores.partitions.all()


def set_partition_count(backend: Backend, count: int, queues: list[str]) -> None:
    """Spread jobs over ``count`` partitions from now on (0: switch partitioned claims off and
    drop their index). Due jobs of ``queues`` in partitions that no longer exist are moved."""
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_PARTITIONS:
        raise ConfigError(f"bad partition count {count!r}: use a whole number from 0 to {MAX_PARTITIONS}")
    store = backend.stores.partitions
    if count and not store.index_exists():
        store.create_index()
    store.resize(count)
    if count:
        while queues and store.repartition(queues, count) == REPARTITION_BATCH:
            pass
    elif store.index_exists():
        store.drop_index()


def check_partitions_ready(backend: Backend) -> int:
    """The partition count, for a worker about to claim by partition; ConfigError if none."""
    store = backend.stores.partitions
    count = store.count()
    if not count or not store.index_exists():
        raise ConfigError(
            f"partitioned claims are not set up in {backend.url}: run "
            f"`batchq partitions set {DEFAULT_PARTITIONS}` first (once per database)"
        )
    return count


class PartitionLease:
    """A worker's lease on one partition at a time.

    ``current()`` gives the partition to claim from, leasing one when the worker holds none,
    has claimed ``jobs_per_lease`` jobs from it, or lost it; it renews the lease once half of it
    has gone by, so a worker draining a partition keeps it. ``exhausted()`` gives up a partition
    whose claim came back empty.
    """

    def __init__(
        self,
        backend: Backend,
        worker: str,
        *,
        jobs_per_lease: int = DEFAULT_JOBS_PER_LEASE,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        self.backend = backend
        self.store = backend.stores.partitions
        self.worker = worker
        self.jobs_per_lease = jobs_per_lease
        self.lease_seconds = lease_seconds
        self.partition: int | None = None
        self.leases = 0  # leases taken, for reports and tests
        self._claimed = 0
        self._renew_at = 0.0  # monotonic
        self._count, self._count_read_at = 0, -COUNT_CACHE_SECONDS  # for tidy()

    def current(self, queues: list[str]) -> int | None:
        """The partition this worker claims from now; None when no free partition holds a due job
        of ``queues``."""
        if self.partition is not None and self._claimed >= self.jobs_per_lease:
            self.release()
        if self.partition is not None and time.monotonic() >= self._renew_at and not self._renew():
            self.partition = None
        if self.partition is None:
            self._lease(queues)
        return self.partition

    def tidy(self, queues: list[str]) -> None:
        """At a worker's tick: due jobs of ``queues`` that a producer placed in a partition that
        no longer exists move to one that does (the count is read again once a minute)."""
        now = time.monotonic()
        if now >= self._count_read_at + COUNT_CACHE_SECONDS:
            self._count, self._count_read_at = self.store.count(), now
        if self._count and queues:
            self.store.repartition(queues, self._count)

    def claimed(self, jobs: int) -> None:
        self._claimed += jobs

    def exhausted(self, queues: list[str]) -> int | None:
        """The partition's claim found nothing: release it and lease another."""
        self.release()
        return self.current(queues)

    def release(self) -> None:
        """Give the partition back (free at once; the least recently used from now). Forgotten
        only once the release committed: a failed one is tried again by the retried claim."""
        if self.partition is not None:
            self.store.release(self.partition, self.worker)
            self.partition = None

    def work_elsewhere(self, queues: list[str]) -> bool:
        """Do ``queues`` hold due jobs though no free partition does? (Other workers lease them:
        this worker waits for one of those partitions rather than exit as if the queue were empty.)"""
        return bool(queues) and self.store.jobs_due(queues)

    def _lease(self, queues: list[str]) -> None:
        """Lease the least recently used free partition with work; failing that, take back the
        partitions of workers that died holding them, and try once more."""
        if not queues:
            return
        if self._take(queues) is None and self._free_dead_holders():
            self._take(queues)

    def _take(self, queues: list[str]) -> int | None:
        self.partition = self.store.lease(self.worker, queues, self.lease_seconds)
        if self.partition is not None:
            self.leases += 1
            self._claimed = 0
            self._renew_at = time.monotonic() + self.lease_seconds / 2
        return self.partition

    def _renew(self) -> bool:
        assert self.partition is not None
        if not self.store.renew(self.partition, self.worker, self.lease_seconds):
            return False  # expired: another worker may be in it now (waiting, never a double run)
        self._renew_at = time.monotonic() + self.lease_seconds / 2
        return True

    def _free_dead_holders(self) -> int:
        """Release the leases of workers that are gone (their liveness lock is free)."""
        freed = 0
        for leased in self.store.leased_by_others(self.worker):
            if self.backend.liveness.is_alive(leased.holder) is False:
                freed += self.store.release(leased.partition, leased.holder)
        return freed
