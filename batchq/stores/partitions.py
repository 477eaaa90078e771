"""The partition table's operations (batchq.coordination.partitions): count, list, resize, lease, release.

Statements in ``sql/<dialect>/partitions.sql``. A lease is one UPDATE of the least recently used
free partition with work; MySQL, with no UPDATE ... RETURNING, then reads which partition it
leased (MySQLPartitionStore).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.stored import Row
from .base import Store

REPARTITION_BATCH = 1000  # rows per jobs_repartition statement (the queries' LIMIT)


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    held: bool
    holder: str | None  # the worker holding it, if held
    last_holder: str | None
    expires_in: float | None  # seconds, on the database's clock


@dataclass(frozen=True)
class Leased:
    """A partition some worker leases, as a worker finding none free sees it."""

    partition: int
    holder: Any  # lock_by as stored: a worker's name, or whatever a row written by hand holds


class PartitionStore(Store):
    """Partitions: rows of ``batchq_partition``, and the index partitioned claims walk."""

    def count(self, conn: Any = None) -> int:
        """How many partitions jobs are spread over (0: partitioned claims are not set up); on
        ``conn``, the application's connection, when given."""
        row = self.db.fetchone("partitions_count", conn=conn)
        return int(row["partitions"]) if row else 0

    def all(self) -> list[PartitionInfo]:
        return [_info(row) for row in self.db.fetchall("partitions_list")]

    def index_exists(self) -> bool:
        """Is the index partitioned claims walk there?"""
        row = self.db.fetchone("partition_index_exists")
        return bool(row and row["present"])

    def create_index(self) -> None:
        """Build the index partitioned claims walk (what a failed build left is cleared first)."""
        self.db.execute("partition_index_clear")
        self.db.execute("partition_index_create")

    def drop_index(self) -> None:
        self.db.execute("partition_index_drop")

    def resize(self, count: int) -> None:
        """Partitions 0 .. count-1 exist, and no other."""
        self.db.retrying(lambda: self.db.execute("partitions_drop_above", {"count": count}))
        if count:
            self.db.insert_many("partition_add", [{"partition": n} for n in range(count)])

    def repartition(self, queues: Sequence[str], count: int) -> int:
        """Move up to REPARTITION_BATCH due jobs of ``queues`` out of partitions ``count`` and
        up; how many moved."""
        params = {"queues": list(queues), "count": count}
        return self.db.retrying(lambda: self.db.execute("jobs_repartition", params))

    def lease(self, worker: str, queues: Sequence[str], ttl: float) -> int | None:
        """Lease the least recently used free partition holding a due job of ``queues`` for
        ``ttl`` seconds; None if there is none."""
        row = self._lease({"worker": worker, "queues": list(queues), "ttl": ttl})
        return None if row is None else int(row["partition_no"])

    def _lease(self, params: dict[str, Any]) -> Row | None:
        return self.db.fetchone("partition_lease", params)

    def renew(self, partition: int, worker: str, ttl: float) -> bool:
        """Extend a lease that is still ``worker``'s; False when it expired."""
        params = {"partition": partition, "worker": worker, "ttl": ttl}
        return self.db.execute("partition_renew", params) == 1

    def release(self, partition: int, worker: Any) -> int:
        """End ``worker``'s lease of ``partition`` (its own, or a dead worker's); 1 if it had one."""
        return self.db.execute("partition_release", {"partition": partition, "worker": worker})

    def leased_by_others(self, worker: str) -> list[Leased]:
        """The partitions other workers lease."""
        rows = self.db.fetchall("partitions_leased", {"worker": worker})
        return [Leased(int(row["partition_no"]), row["lock_by"]) for row in rows]

    def jobs_due(self, queues: Sequence[str]) -> bool:
        """Does any of ``queues`` hold a due job, in whatever partition?"""
        row = self.db.fetchone("partition_jobs_due", {"queues": list(queues)})
        return bool(row and row["due"])


class MySQLPartitionStore(PartitionStore, dialect="mysql"):
    def _lease(self, params: dict[str, Any]) -> Row | None:
        """partition_lease, then partition_leased: which partition it gave this worker."""
        if not self.db.execute("partition_lease", params):
            return None
        return self.db.fetchone("partition_leased", params)


def _info(row: Row) -> PartitionInfo:
    held = bool(row["held"])
    last = None if row["lock_by"] is None else str(row["lock_by"])
    return PartitionInfo(
        partition=int(row["partition_no"]),
        held=held,
        holder=last if held else None,
        last_holder=last,
        expires_in=float(row["expires_in"]) if held and row["expires_in"] is not None else None,
    )
