"""Job dependencies (issue 30): ``enqueue(after=[ids])``, and the chains and groups built on it.

A job enqueued after others *waits*: status 'scheduled' with run_at at the end of time (no claim
and no promotion reaches it along the due index), ``parents_left`` counting the parents that have
not succeeded yet, and one ``batchq_dependency`` row per parent. Its parents are marked
``dependants = 1`` in the same transaction, under their row locks.

Every plain finish (the DELETE riding with a worker's next claim, ``jobs_delete``) skips a job so
marked; the worker then finishes it here (``finish_parents``), in one transaction: its children's
counts go down, the edges go, and the job is deleted, fenced by its claim's token. The count is
decremented by an UPDATE of the child row, so parents finishing at the same instant on different
workers take turns on it, on every backend, and exactly one of them sees it reach 0 and makes the
child due. A worker killed before that commit leaves neither: gc-processing puts the parent back
and the count is decremented when it next succeeds. A job without dependants pays nothing but the
``dependants = 0`` test on the row its DELETE already found.

A parent that fails for good fails its waiting dependants, with the reason, in the transaction of
its failure (``fail_for_good``), and theirs in turn. ``repair`` (run by gc-processing and by
gc-error's actions) catches what another path left: a parent deleted by purge or cancel_where, a
crash between a failure and its dependants'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from .backends import Backend
from .errors import ConfigError
from .failures import fingerprint_of
from .job import JOB_ID_RANGE, Job, Kept, kept_document

MAX_PARENTS = 1000  # per job: one statement of edges, one IN list
ALIVE = ("ready", "scheduled", "blocked", "processing")
ORPHAN_BATCH = 1000  # deps_orphans' LIMIT


@dataclass(frozen=True)
class WaitingFor:
    """What a waiting job waits for (explain): some of its unfinished parents, with their status
    (None: gone without succeeding), and how many there are in all."""

    parents: tuple[tuple[int, str | None], ...]
    total: int


def check_after(after: Any) -> list[int]:
    """``enqueue(after=...)``: one job id or an iterable of them, as a sorted list without
    duplicates; ConfigError (one line) for anything else, before anything is written."""
    ids = [after] if isinstance(after, int) and not isinstance(after, bool) else after
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise ConfigError(f"bad after={after!r}: give a job id or a list of job ids")
    found = list(ids)
    for job_id in found:
        if isinstance(job_id, bool) or not isinstance(job_id, int):
            raise ConfigError(f"bad after= job id {job_id!r}: use whole numbers (what enqueue returned)")
        if not JOB_ID_RANGE[0] <= job_id <= JOB_ID_RANGE[1]:
            raise ConfigError(f"after=: no job {job_id} (out of every backend's id range)")
    if not found:
        raise ConfigError("after= is empty: give the ids of the jobs to wait for, or leave it out")
    if len(set(found)) > MAX_PARENTS:
        raise ConfigError(f"after= names {len(set(found))} jobs: at most {MAX_PARENTS} per job")
    return sorted(set(found))


def write_waiting(backend: Backend, row: dict[str, Any], parents: list[int], conn: Any = None) -> int:
    """Insert the job ``row`` waiting for ``parents`` (check_after's list) and link it; the
    caller's transaction (``conn``, or an open backend.transaction()) makes it atomic. A parent
    that is unknown, already ended or failed is refused with ConfigError before any write.

    A cycle cannot form: a job's parents exist before it does, so none can wait for it."""
    found = {int(r["id"]): str(r["status"]) for r in backend.fetchall("deps_parents", {"ids": parents}, conn)}
    _refuse_parents(parents, found)
    if backend.execute("deps_mark_parents", {"ids": parents}, conn) < len(parents):
        raise ConfigError(  # a parent ended between the read and the mark: nothing is kept
            f"after=: one of jobs {_listed(parents)} ended while this job was enqueued; nothing was written"
        )
    child = backend.insert_job(row, conn)
    backend.execute("deps_wait", {"id": child, "count": len(parents)}, conn)
    backend.insert_many("deps_link", [{"parent": parent, "child": child} for parent in parents], conn)
    return child


def enqueue_waiting(backend: Backend, row: dict[str, Any], parents: list[int], conn: Any = None) -> int:
    """write_waiting in a transaction of its own (retried on deadlocks), or in ``conn``'s."""
    if conn is not None:
        return write_waiting(backend, row, parents, conn)
    return in_transaction(backend, lambda: write_waiting(backend, row, parents))


def in_transaction(backend: Backend, write: Callable[[], Any]) -> Any:
    def attempt() -> Any:
        with backend.transaction():
            return write()

    return backend.retrying(attempt)


def _refuse_parents(parents: list[int], found: dict[int, str]) -> None:
    missing = [job_id for job_id in parents if job_id not in found]
    if missing:
        raise ConfigError(
            f"after=: no job {_listed(missing)} waiting or running (an unknown id, or a job that "
            "already ended: enqueue a dependant before its parents finish)"
        )
    failed = [job_id for job_id in parents if found[job_id] not in ALIVE]
    if failed:
        raise ConfigError(
            f"after=: job {_listed(failed)} failed for good; requeue it (batchq gc-error --requeue) "
            "before enqueueing jobs after it"
        )


def _listed(ids: Sequence[int]) -> str:
    shown = ", ".join(str(job_id) for job_id in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


# -- the worker's side --------------------------------------------------------------------------


def finish_parents(backend: Backend, done: Sequence[Job], kept: Sequence[Kept] | None = None) -> int:
    """Finish the jobs of ``done`` (one claim's, succeeded) that the plain DELETE left because
    others wait for them: release their children and delete them, in one transaction, fenced by
    their claim's token. Returns how many were still ours (0: none had dependants, or a sweep
    took them back)."""
    if not done:
        return 0
    token = done[0].claim_token

    def finish() -> int:
        with backend.transaction():
            params = {"ids": [job.id for job in done], "token": token}
            owned = [int(r[0]) for r in backend.rows("deps_owned", params)]
            if not owned:
                return 0
            if backend.rows("deps_children", {"ids": owned}):  # locked in id order
                for parent in owned:
                    backend.execute("deps_release", {"parent": parent})
            backend.execute("deps_forget", {"ids": owned})
            return _delete_parents(backend, owned, token, kept)

    return backend.retrying(finish)


def _delete_parents(backend: Backend, owned: list[int], token: str, kept: Sequence[Kept] | None) -> int:
    mine = [entry for entry in kept or () if entry.id in set(owned)]
    if not mine:
        return backend.execute("deps_delete", {"ids": owned, "token": token})
    params = {"done_token": token, "done_ids": owned, "kept": kept_document(mine)}
    if backend.dialect == "postgresql":  # its claims copy what their DELETE returns: copied here
        row = backend.fetchone("deps_delete_keep", params)
        return int(row["deleted"]) if row else 0
    return backend.execute("deps_delete_keep", params)


def fail_for_good(backend: Backend, query: str, params: dict[str, Any], keep: bool) -> int:
    """A job's last failure (``query``: job_error or job_fail_invalid, fenced by its token), its
    history record when kept, and the failure of its waiting dependants, in one transaction."""

    def fail() -> int:
        with backend.transaction():
            matched = backend.execute(query, params)
            if matched:
                if keep:
                    backend.execute("job_keep_failed", {"id": params["id"]})
                fail_dependants(backend, [params["id"]])
            return matched

    return backend.retrying(fail)


def fail_dependants(backend: Backend, parents: Iterable[int], how: str = "failed for good") -> int:
    """Fail the waiting children of ``parents`` with the reason, then theirs (each failed child
    is a parent that failed for good); in the caller's transaction if one is open. Returns how
    many jobs were failed."""
    failed = 0
    frontier = [(parent, how) for parent in parents]
    while frontier:
        parent, why = frontier.pop()
        children = [int(r[0]) for r in backend.rows("deps_waiting_children", {"parent": parent})]
        if not children:
            continue
        error = f"DependencyFailed: parent job {parent} {why}"
        params = {"ids": children, "error": error, "fingerprint": fingerprint_of("DependencyFailed", error)}
        failed += backend.execute("deps_fail", params)
        frontier.extend((child, "failed for good") for child in children)
    return failed


# -- sweeps and explain ----------------------------------------------------------------------------


def repair(backend: Backend) -> int:
    """Fail the waiting dependants of parents that failed for good or were deleted without
    succeeding, by whatever path (purge, cancel_where, a crash between a failure and its
    dependants'); then drop the edges of deleted parents, so that a requeued dependant runs
    without them. Returns how many jobs were failed."""
    failed = 0
    while True:
        rows = backend.retrying(lambda: backend.fetchall("deps_orphans"))
        if not rows:
            break
        parents = {int(r["parent_id"]): r["parent_status"] for r in rows}
        for parent, status in parents.items():
            how = "was deleted before it succeeded" if status is None else "failed for good"
            failed += in_transaction(backend, partial(fail_dependants, backend, [parent], how))
        if len(rows) < ORPHAN_BATCH:
            break
    gone = backend.retrying(lambda: backend.fetchall("deps_gone_edges"))
    edges = [{"parent": int(r["parent_id"]), "child": int(r["child_id"])} for r in gone]
    if edges:
        in_transaction(backend, lambda: sum(backend.execute("deps_unlink", edge) for edge in edges))
    return failed


def waiting_for(backend: Backend, job_id: int) -> WaitingFor:
    rows = backend.fetchall("deps_waiting_for", {"id": job_id})
    parents = tuple((int(r["parent_id"]), _text_or_none(r["parent_status"])) for r in rows)
    return WaitingFor(parents, int(rows[0]["total"]) if rows else 0)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
