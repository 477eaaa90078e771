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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from .backends import Backend

DEFAULT_PARTITIONS = 16
MAX_PARTITIONS = 1024
DEFAULT_JOBS_PER_LEASE = 100  # the seed's "a certain number": larger is less lease traffic, less fair
DEFAULT_LEASE_SECONDS = 30.0
COUNT_CACHE_SECONDS = 60.0  # how stale a producer's partition count may be
REPARTITION_BATCH = 1000  # rows per jobs_repartition statement (the queries' LIMIT)


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    held: bool
    holder: str | None  # the worker holding it, if held
    last_holder: str | None
    expires_in: float | None  # seconds, on the database's clock


def partition_count(backend: Backend, conn: Any = None) -> int:
    """How many partitions jobs are spread over (0: partitioned claims are not set up)."""
    row = backend.fetchone("partitions_count", conn=conn)
    return int(row["partitions"]) if row else 0


def list_partitions(backend: Backend) -> list[PartitionInfo]:
    return [_info(row) for row in backend.fetchall("partitions_list")]


def set_partition_count(backend: Backend, count: int, queues: list[str]) -> None:
    """Spread jobs over ``count`` partitions from now on (0: switch partitioned claims off and
    drop their index). Due jobs of ``queues`` in partitions that no longer exist are moved."""
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_PARTITIONS:
        raise ConfigError(f"bad partition count {count!r}: use a whole number from 0 to {MAX_PARTITIONS}")
    if count and not backend.fetchone("partition_index_exists")["present"]:  # type: ignore[index]
        backend.execute("partition_index_clear")
        backend.execute("partition_index_create")
    backend.retrying(lambda: backend.execute("partitions_drop_above", {"count": count}))
    if count:
        backend.insert_many("partition_add", [{"partition": n} for n in range(count)])
        while queues and repartition(backend, queues, count) == REPARTITION_BATCH:
            pass
    elif backend.fetchone("partition_index_exists")["present"]:  # type: ignore[index]
        backend.execute("partition_index_drop")


def repartition(backend: Backend, queues: list[str], count: int) -> int:
    """Move one batch of due jobs of ``queues`` out of partitions ``count`` and up."""
    params = {"queues": queues, "count": count}
    return backend.retrying(lambda: backend.execute("jobs_repartition", params))


def check_partitions_ready(backend: Backend) -> int:
    """The partition count, for a worker about to claim by partition; ConfigError if none."""
    count = partition_count(backend)
    if not count or not backend.fetchone("partition_index_exists")["present"]:  # type: ignore[index]
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
            self._count, self._count_read_at = partition_count(self.backend), now
        if self._count and queues:
            repartition(self.backend, queues, self._count)

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
            self.backend.execute("partition_release", {"partition": self.partition, "worker": self.worker})
            self.partition = None

    def work_elsewhere(self, queues: list[str]) -> bool:
        """Do ``queues`` hold due jobs though no free partition does? (Other workers lease them:
        this worker waits for one of those partitions rather than exit as if the queue were empty.)"""
        row = self.backend.fetchone("partition_jobs_due", {"queues": queues}) if queues else None
        return bool(row and row["due"])

    def _lease(self, queues: list[str]) -> None:
        """Lease the least recently used free partition with work; failing that, take back the
        partitions of workers that died holding them, and try once more."""
        if not queues:
            return
        if self._take(queues) is None and self._free_dead_holders():
            self._take(queues)

    def _take(self, queues: list[str]) -> int | None:
        params = {"worker": self.worker, "queues": queues, "ttl": self.lease_seconds}
        self.partition = _lease(self.backend, params)
        if self.partition is not None:
            self.leases += 1
            self._claimed = 0
            self._renew_at = time.monotonic() + self.lease_seconds / 2
        return self.partition

    def _renew(self) -> bool:
        params = {"partition": self.partition, "worker": self.worker, "ttl": self.lease_seconds}
        if self.backend.execute("partition_renew", params) != 1:
            return False  # expired: another worker may be in it now (waiting, never a double run)
        self._renew_at = time.monotonic() + self.lease_seconds / 2
        return True

    def _free_dead_holders(self) -> int:
        """Release the leases of workers that are gone (their liveness lock is free)."""
        freed = 0
        for row in self.backend.fetchall("partitions_leased", {"worker": self.worker}):
            holder = row["lock_by"]
            if self.backend.liveness.is_alive(holder) is False:
                params = {"partition": row["partition_no"], "worker": holder}
                freed += self.backend.execute("partition_release", params)
        return freed


def _lease(backend: Backend, params: dict[str, Any]) -> int | None:
    """One lease statement (MySQL: then partition_leased, having no UPDATE ... RETURNING)."""
    if backend.has_update_returning:
        row = backend.fetchone("partition_lease", params)
    elif backend.execute("partition_lease", params):
        row = backend.fetchone("partition_leased", params)
    else:
        row = None
    return None if row is None else int(row["partition_no"])


def _info(row: dict[str, Any]) -> PartitionInfo:
    held = bool(row["held"])
    last = None if row["lock_by"] is None else str(row["lock_by"])
    return PartitionInfo(
        partition=int(row["partition_no"]),
        held=held,
        holder=last if held else None,
        last_holder=last,
        expires_in=float(row["expires_in"]) if held and row["expires_in"] is not None else None,
    )
