"""The operations of job dependencies (batchq.jobs.dependencies): a waiting job's parents and edges,
the release of a finished parent's children, the failure of a failed one's, and the sweep's reads.
Statements in ``sql/<dialect>/dependencies.sql``.

What may run in an enqueue (the parents' read, their mark, the children's wait and links) takes
``conn``, the application's connection, inside its transaction (an enqueue with ``conn=``);
without it, the store's own. Nothing here opens a transaction or retries: batchq.jobs.dependencies
composes these calls into its transactions. PostgreSQL's claims copy a kept job into the history
from what their DELETE returns, so its finish of a kept parent copies it too
(PostgreSQLDependencyStore).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.failures import fingerprint_of
from ..core.job import Kept, kept_document
from .base import Store

ORPHAN_BATCH = 1000  # deps_orphans' and deps_gone_edges' LIMIT


@dataclass(frozen=True)
class Parent:
    """A named parent as an enqueue finds it: its job row's status, or, once that row is gone,
    its history record's outcome (``ended``: succeeded, failed or cancelled)."""

    id: int
    status: str
    ended: bool


@dataclass(frozen=True)
class Orphan:
    """A waiting child's edge to a parent that failed for good (``parent_status`` 'failed') or
    was deleted without succeeding (None)."""

    parent: int
    child: int
    parent_status: str | None


@dataclass(frozen=True)
class WaitingFor:
    """What a waiting job waits for (explain): some of its unfinished parents, with their status
    (None: gone without succeeding), and how many there are in all."""

    parents: tuple[tuple[int, str | None], ...]
    total: int


class DependencyStore(Store):
    """Dependencies: ``batchq_job``'s parents_left and dependants, and ``batchq_dependency``."""

    # -- enqueue ---------------------------------------------------------------------------

    def parents(self, ids: Sequence[int], conn: Any = None) -> dict[int, Parent]:
        """The parents of ``ids`` known to the job table or, once gone from it, to the history
        (a record not yet expired), in one snapshot; the job row wins where both have one (a
        failed job requeued keeps its old failure's record)."""
        found: dict[int, Parent] = {}
        for row in self.db.fetchall("deps_parents", {"ids": list(ids)}, conn):
            parent = Parent(int(row["id"]), str(row["status"]), bool(int(row["ended"])))
            if parent.id not in found or not parent.ended:
                found[parent.id] = parent
        return found

    def mark_parents(self, ids: Sequence[int], conn: Any = None) -> int:
        """Mark the waiting or running jobs of ``ids`` as having dependants, under their row
        locks (inside a transaction); how many were marked (fewer: one ended meanwhile)."""
        return self.db.execute("deps_mark_parents", {"ids": list(ids)}, conn)

    def wait(self, children: Sequence[int], parents: Sequence[int], conn: Any = None) -> None:
        """Make the jobs ``children``, just inserted in this transaction, wait for ``parents``:
        their count of parents left, and one edge per parent and child."""
        self.db.execute("deps_wait", {"ids": list(children), "count": len(parents)}, conn)
        edges = [{"parent": parent, "child": child} for child in children for parent in parents]
        self.db.insert_many("deps_link", edges, conn)

    # -- a parent's finish ---------------------------------------------------------------------

    def owned(self, ids: Sequence[int], token: str) -> list[int]:
        """Of the finished jobs ``ids`` that have dependants, those still this claim's (fenced by
        ``token``), locked in id order."""
        return [int(row[0]) for row in self.db.rows("deps_owned", {"ids": list(ids), "token": token})]

    def lock_children(self, parents: Sequence[int]) -> list[int]:
        """The children of ``parents``, locked in id order (finishers sharing children never
        deadlock)."""
        return [int(row[0]) for row in self.db.rows("deps_children", {"ids": list(parents)})]

    def release(self, parent: int) -> int:
        """One parent fewer for each child of ``parent`` (once per finished parent); a child
        whose last parent this was becomes due now. How many children were counted down."""
        return self.db.execute("deps_release", {"parent": parent})

    def forget(self, parents: Sequence[int]) -> int:
        """Drop every edge of ``parents``; how many."""
        return self.db.execute("deps_forget", {"ids": list(parents)})

    def delete(self, ids: Sequence[int], token: str) -> int:
        """Delete the finished parents ``ids`` still this claim's; how many."""
        return self.db.execute("deps_delete", {"ids": list(ids), "token": token})

    def delete_keeping(self, ids: Sequence[int], token: str, kept: Sequence[Kept]) -> int:
        """``delete`` for parents of which ``kept`` (the measurements of those among them that
        keep their history) are copied into the history; how many were deleted."""
        return self.db.execute("deps_delete_keep", _keep_params(ids, token, kept))

    # -- a parent's failure ------------------------------------------------------------------

    def waiting_children(self, parent: int) -> list[int]:
        """The children of ``parent`` still waiting, in id order."""
        return [int(row[0]) for row in self.db.rows("deps_waiting_children", {"parent": parent})]

    def fail_waiting(self, ids: Sequence[int], error: str, fingerprint: str) -> int:
        """Fail for good those of ``ids`` still waiting, with ``error``; how many."""
        params = {"ids": list(ids), "error": error, "fingerprint": fingerprint}
        return self.db.execute("deps_fail", params)

    def fail_dependants(self, parents: Iterable[int], how: str = "failed for good") -> int:
        """Fail the waiting children of ``parents`` with the reason, then theirs (each failed
        child is a parent that failed for good); in the caller's transaction if one is open.
        Returns how many jobs were failed."""
        failed = 0
        frontier = [(parent, how) for parent in parents]
        while frontier:
            parent, why = frontier.pop()
            children = self.waiting_children(parent)
            if not children:
                continue
            error = f"DependencyFailed: parent job {parent} {why}"
            failed += self.fail_waiting(children, error, fingerprint_of("DependencyFailed", error))
            frontier.extend((child, "failed for good") for child in children)
        return failed

    # -- the sweep and explain -----------------------------------------------------------------

    def orphans(self) -> list[Orphan]:
        """Up to ORPHAN_BATCH edges of waiting children to parents that failed for good or are gone."""
        rows = self.db.fetchall("deps_orphans")
        return [Orphan(int(r["parent_id"]), int(r["child_id"]), _text(r["parent_status"])) for r in rows]

    def gone_edges(self) -> list[tuple[int, int]]:
        """Up to ORPHAN_BATCH edges (parent, child) whose parent is gone and whose child waits no more."""
        return [(int(r["parent_id"]), int(r["child_id"])) for r in self.db.fetchall("deps_gone_edges")]

    def unlink(self, parent: int, child: int) -> int:
        """Drop one edge; 1 if it was there."""
        return self.db.execute("deps_unlink", {"parent": parent, "child": child})

    def waiting_for(self, job_id: int) -> WaitingFor:
        """Up to five of the parents ``job_id`` waits for, with their status, and how many."""
        rows = self.db.fetchall("deps_waiting_for", {"id": job_id})
        parents = tuple((int(r["parent_id"]), _text(r["parent_status"])) for r in rows)
        return WaitingFor(parents, int(rows[0]["total"]) if rows else 0)


class PostgreSQLDependencyStore(DependencyStore, dialect="postgresql"):
    def delete_keeping(self, ids: Sequence[int], token: str, kept: Sequence[Kept]) -> int:
        """deps_delete_keep copies the parents from what its DELETE returns (a claim's DELETE,
        which left them, copied nothing) and counts them in the row it returns."""
        row = self.db.fetchone("deps_delete_keep", _keep_params(ids, token, kept))
        return int(row["deleted"]) if row else 0


def _keep_params(ids: Sequence[int], token: str, kept: Sequence[Kept]) -> dict[str, Any]:
    return {"done_token": token, "done_ids": list(ids), "kept": kept_document(kept)}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
