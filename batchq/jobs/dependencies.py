"""Job dependencies (issue 30): ``enqueue(after=[ids])``, and the chains and groups built on it.

A job enqueued after others *waits*: status 'scheduled' with run_at at the end of time (no claim
and no promotion reaches it along the due index), ``parents_left`` counting the parents that have
not succeeded yet, and one ``batchq_dependency`` row per parent. Its parents are marked
``dependants = 1`` in the same transaction, under their row locks. A parent whose row is gone
because it succeeded, and whose queue keeps history, is found in ``batchq_history``: there is
nothing to wait for; a parent unknown to both is refused, as is one that ended without success.

Every plain finish (the DELETE riding with a worker's next claim, ``jobs_delete``) skips a job so
marked; the worker then finishes it here (``finish_parents``), in one transaction: its children's
counts go down, the edges go, and the job is deleted, fenced by its claim's token. The count is
decremented by an UPDATE of the child row, so parents finishing at the same instant on different
workers take turns on it, on every backend, and exactly one of them sees it reach 0 and makes the
child due. A worker killed before that commit leaves neither: gc-processing puts the parent back
and the count is decremented when it next succeeds. A job without dependants pays nothing but the
``dependants = 0`` test on the row its DELETE already found.

A parent that fails for good fails its waiting dependants, with the reason, in the transaction of
its failure (``JobStore.fail_for_good``), and theirs in turn. ``repair`` (run by gc-processing and by
gc-error's actions) catches what another path left: a parent deleted by purge or cancel_where, a
crash between a failure and its dependants'.

The statements are the dependency store's (batchq.stores.dependencies); this module composes them
into transactions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

from ..backends import Backend
from ..core.job import JOB_ID_RANGE, Job, Kept
from ..errors import ConfigError
from ..stores.dependencies import ORPHAN_BATCH, DependencyStore, Parent, WaitingFor

MAX_PARENTS = 1000  # per job: one statement of edges, one IN list
MAX_EDGES = 100_000  # per enqueue_many(after=): its jobs times their parents, written in one go
ALIVE = ("ready", "scheduled", "blocked", "processing")
MARK_ATTEMPTS = 3  # reads of the parents, when one ends between the read and its mark


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
    unique = {int(job_id) for job_id in found}  # plain ints: Enqueued is one, drivers want one type
    if len(unique) > MAX_PARENTS:
        raise ConfigError(f"after= names {len(unique)} jobs: at most {MAX_PARENTS} per job")
    return sorted(unique)


def write_waiting(backend: Backend, row: dict[str, Any], parents: list[int], conn: Any = None) -> int:
    """Insert the job ``row`` waiting for ``parents`` (check_after's list) and link it; the
    caller's transaction (``conn``, or an open backend.transaction()) makes it atomic. A parent
    that is unknown, or ended without succeeding, is refused with ConfigError before any write.

    A cycle cannot form: a job's parents exist before it does, so none can wait for it."""
    return write_waiting_many(backend, [row], parents, conn)[0]


def write_waiting_many(
    backend: Backend, rows: Sequence[dict[str, Any]], parents: list[int], conn: Any = None
) -> list[int]:
    """write_waiting for several job rows, each waiting for the same ``parents``; their ids.

    A parent whose job row is gone but whose history record says it succeeded has nothing left
    to wait for: the jobs wait for the others, or, when every parent has succeeded, are written
    due at once (as enqueue without after= writes them)."""
    check_links(len(rows), parents)
    store = backend.stores.dependencies
    waiting_on = _mark_unfinished(store, parents, conn)
    children = [backend.stores.jobs.insert_job(row, conn) for row in rows]
    if waiting_on and children:
        store.wait(children, waiting_on, conn)
    return children


def check_links(jobs: int, parents: list[int]) -> None:
    """ConfigError when ``jobs`` jobs waiting for ``parents`` are more links than one call writes."""
    if jobs * len(parents) > MAX_EDGES:
        raise ConfigError(
            f"after=: {jobs} jobs times {len(parents)} parents is {jobs * len(parents)} links, "
            f"at most {MAX_EDGES} per call: enqueue the jobs in smaller batches"
        )


def enqueue_waiting(backend: Backend, row: dict[str, Any], parents: list[int], conn: Any = None) -> int:
    """write_waiting in a transaction of its own (retried on deadlocks), or in ``conn``'s."""
    return enqueue_waiting_many(backend, [row], parents, conn)[0]


def enqueue_waiting_many(
    backend: Backend, rows: Sequence[dict[str, Any]], parents: list[int], conn: Any = None
) -> list[int]:
    """write_waiting_many in a transaction of its own (retried on deadlocks), or in ``conn``'s."""
    if conn is not None:
        return write_waiting_many(backend, rows, parents, conn)
    return in_transaction(backend, lambda: write_waiting_many(backend, rows, parents))  # type: ignore[no-any-return]


def in_transaction(backend: Backend, write: Callable[[], Any]) -> Any:
    def attempt() -> Any:
        with backend.transaction():
            return write()

    return backend.retrying(attempt)


def check_parents(backend: Backend, parents: list[int], conn: Any = None) -> None:
    """Refuse now (ConfigError) a parent unknown or ended without success, as an enqueue would;
    a read only (enqueue_on_commit's check at the call, before its write reads them again)."""
    _refuse_parents(parents, backend.stores.dependencies.parents(parents, conn))


def _mark_unfinished(store: DependencyStore, parents: list[int], conn: Any) -> list[int]:
    """Of ``parents``, those that have not succeeded yet, marked as having dependants; the
    others succeeded (their history says so). ConfigError for a parent unknown or ended without
    success. A parent that ends between the read and its mark is read again: a success is then
    found in the history (when kept), a failure refused."""
    for _ in range(MARK_ATTEMPTS):
        found = store.parents(parents, conn)
        _refuse_parents(parents, found)
        unfinished = [job_id for job_id in parents if not found[job_id].ended]
        if not unfinished or store.mark_parents(unfinished, conn) == len(unfinished):
            return unfinished
    raise ConfigError(  # each read found a parent that the mark then missed: nothing is kept
        f"after=: one of jobs {_listed(parents)} ended while this job was enqueued, {MARK_ATTEMPTS} times "
        "over; nothing was written: enqueue it again"
    )


def _refuse_parents(parents: list[int], found: dict[int, Parent]) -> None:
    missing = [job_id for job_id in parents if job_id not in found]
    if missing:
        raise ConfigError(
            f"after=: no job {_listed(missing)} waiting, running or succeeded (an unknown id, or a job "
            "that ended and whose history is not kept): enqueue dependants before their parents can "
            "finish, or keep the parents' history (Queue.configure(queue, keep_for=...))"
        )
    failed = [job_id for job_id in parents if not found[job_id].ended and found[job_id].status not in ALIVE]
    if failed:
        raise ConfigError(
            f"after=: job {_listed(failed)} failed for good; requeue it (batchq gc-error --requeue) "
            "before enqueueing jobs after it"
        )
    ended = [job_id for job_id in parents if found[job_id].ended and found[job_id].status != "succeeded"]
    if ended:
        job_id = ended[0]  # the first is enough to act on
        raise ConfigError(
            f"after=: job {job_id} {_ended_how(found[job_id].status)} (its history record says so): "
            "it can never succeed; enqueue without it, or after a new job that does its work"
        )


def _ended_how(outcome: str) -> str:
    return {"failed": "failed for good and was deleted", "cancelled": "was cancelled"}.get(
        outcome, f"ended ({outcome})"
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
        store = backend.stores.dependencies
        with backend.transaction():
            owned = store.owned([job.id for job in done], token)
            if not owned:
                return 0
            if store.lock_children(owned):  # locked in id order
                for parent in owned:
                    store.release(parent)
            store.forget(owned)
            mine = [entry for entry in kept or () if entry.id in set(owned)]
            return store.delete_keeping(owned, token, mine) if mine else store.delete(owned, token)

    return backend.retrying(finish)


# -- sweeps and explain ----------------------------------------------------------------------------


def repair(backend: Backend) -> int:
    """Fail the waiting dependants of parents that failed for good or were deleted without
    succeeding, by whatever path (purge, cancel_where, a crash between a failure and its
    dependants'); then drop the edges of deleted parents, so that a requeued dependant runs
    without them. Returns how many jobs were failed."""
    store = backend.stores.dependencies
    failed = 0
    while True:
        orphans = backend.retrying(store.orphans)
        if not orphans:
            break
        parents = {orphan.parent: orphan.parent_status for orphan in orphans}
        for parent, status in parents.items():
            how = "was deleted before it succeeded" if status is None else "failed for good"
            failed += in_transaction(backend, partial(store.fail_dependants, [parent], how))
        if len(orphans) < ORPHAN_BATCH:
            break
    edges = backend.retrying(store.gone_edges)
    if edges:
        in_transaction(backend, lambda: sum(store.unlink(parent, child) for parent, child in edges))
    return failed


def waiting_for(backend: Backend, job_id: int) -> WaitingFor:
    return backend.stores.dependencies.waiting_for(job_id)
