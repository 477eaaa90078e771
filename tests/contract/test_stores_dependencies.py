"""The dependency store's contract (batchq.stores.dependencies): each method called directly, on
every dialect.

What batchq.jobs.dependencies builds on it (enqueue(after=), the worker's finish, the failure of
dependants, the sweep) is tested in test_dependencies.py; here the operations alone, so that a
dialect's store can be checked by itself. Jobs are made with Queue.enqueue; a claim is made by
hand (its status and token), as a worker's would leave it.
"""

from __future__ import annotations

from typing import Any

import pytest

from batchq import Queue
from batchq.core.job import Kept
from batchq.runtime.worker import RunOptions, Worker
from batchq.stores.dependencies import DependencyStore, Orphan, Parent, PostgreSQLDependencyStore, WaitingFor
from tests.support.db import sql

TOKEN = "claim-token-1"


def store(queue: Queue) -> DependencyStore:
    return queue.backend.stores.dependencies


def job(q: Queue, n: int = 0, **options: Any) -> int:
    return int(q.enqueue("jobs:noop", {"n": n}, **options))


def row(queue: Queue, job_id: int) -> tuple[str, int | None, int] | None:
    """(status, parents_left, dependants) of a job, None once it is gone."""
    rows = sql(queue, f"SELECT status, parents_left, dependants FROM batchq_job WHERE id = {job_id}")
    if not rows:
        return None
    status, left, dependants = rows[0]
    return str(status), None if left is None else int(left), int(dependants)


def edges(queue: Queue) -> list[tuple[int, int]]:
    return sorted(
        (int(p), int(c)) for p, c in sql(queue, "SELECT parent_id, child_id FROM batchq_dependency")
    )


def claimed(queue: Queue, job_id: int) -> None:
    """The job as a worker's claim leaves it."""
    sql(queue, f"UPDATE batchq_job SET status = 'processing', claim_token = '{TOKEN}' WHERE id = {job_id}")


def waiting(queue: Queue, parents: list[int], n: int = 0) -> int:
    """A child inserted and made to wait for ``parents`` through the store, in one transaction."""
    deps = store(queue)
    with queue.backend.transaction():
        assert deps.mark_parents(parents) == len(parents)
        child = job(queue, n)
        deps.wait([child], parents)
    return child


def test_each_dialect_gets_its_variant(queue: Queue) -> None:
    expected = PostgreSQLDependencyStore if queue.backend.dialect == "postgresql" else DependencyStore
    assert type(store(queue)) is expected
    assert store(queue) is store(queue)  # made once per connection


def test_parents_come_from_the_job_table_then_the_history(queue: Queue) -> None:
    queue.configure("kept", keep_for="1d")
    ready, done, cancelled = job(queue, 1), job(queue, 2, queue="kept"), job(queue, 3, queue="kept")
    assert queue.cancel(cancelled)  # kept: its history record says cancelled
    Worker(queue, RunOptions(queues=("kept",))).run()
    found = store(queue).parents([ready, done, cancelled, 999999])
    assert found == {
        ready: Parent(ready, "ready", ended=False),
        done: Parent(done, "succeeded", ended=True),
        cancelled: Parent(cancelled, "cancelled", ended=True),
    }


def test_a_job_row_wins_over_its_old_history_record(queue: Queue) -> None:
    queue.configure("kept", keep_for="1d")
    failed = int(queue.enqueue("jobs:fail", {}, queue="kept", max_errors=1))
    Worker(queue, RunOptions(queues=("kept",))).run()
    assert store(queue).parents([failed]) == {failed: Parent(failed, "failed", ended=False)}
    sql(queue, f"UPDATE batchq_job SET status = 'ready' WHERE id = {failed}")  # requeued by hand
    assert store(queue).parents([failed]) == {failed: Parent(failed, "ready", ended=False)}


def test_mark_parents_marks_only_jobs_waiting_or_running(queue: Queue) -> None:
    ready, running, failed = job(queue, 1), job(queue, 2), job(queue, 3)
    claimed(queue, running)
    sql(queue, f"UPDATE batchq_job SET status = 'failed' WHERE id = {failed}")
    with queue.backend.transaction():
        assert store(queue).mark_parents([ready, running, failed, 999999]) == 2
    assert [row(queue, j) for j in (ready, running, failed)] == [
        ("ready", None, 1),
        ("processing", None, 1),
        ("failed", None, 0),
    ]


def test_wait_makes_children_wait_with_one_edge_per_parent(queue: Queue) -> None:
    a, b = job(queue, 1), job(queue, 2)
    with queue.backend.transaction():
        children = [job(queue, 3), job(queue, 4)]
        store(queue).wait(children, [a, b])
    assert [row(queue, child) for child in children] == [("scheduled", 2, 0)] * 2
    assert edges(queue) == sorted((p, c) for p in (a, b) for c in children)
    assert queue.explain(children[0]).delay_reason == "parents"


def test_a_finish_releases_the_children_then_deletes_the_parent(queue: Queue) -> None:
    deps = store(queue)
    a, b = job(queue, 1), job(queue, 2)
    child = waiting(queue, [a, b])
    claimed(queue, a)
    with queue.backend.transaction():
        assert deps.owned([a, b], "another-token") == []
        assert deps.owned([a, b], TOKEN) == [a]  # b: not this claim's
        assert deps.lock_children([a]) == [child]
        assert deps.release(a) == 1
        assert deps.forget([a]) == 1
        assert deps.delete([a], TOKEN) == 1
    assert row(queue, a) is None and row(queue, child) == ("scheduled", 1, 0)
    assert edges(queue) == [(b, child)]
    claimed(queue, b)
    with queue.backend.transaction():
        assert deps.release(b) == 1  # its last parent: due now
        deps.forget([b])
        assert deps.delete([b], "another-token") == 0  # fenced by the claim's token
        assert deps.delete([b], TOKEN) == 1
    assert row(queue, child) == ("ready", 0, 0)
    assert deps.release(b) == 0  # no edge left: nothing counted twice


def test_delete_keeping_deletes_and_where_the_dialect_needs_it_keeps(queue: Queue) -> None:
    parent = job(queue, 1, keep_result=True)
    waiting(queue, [parent])
    claimed(queue, parent)
    kept = [Kept(parent, wall_ns=1_000_000, cpu_us=500, peak=None, growth=None, result="7")]
    with queue.backend.transaction():
        store(queue).forget([parent])
        assert store(queue).delete_keeping([parent], TOKEN, kept) == 1
    assert row(queue, parent) is None
    if queue.backend.dialect == "postgresql":  # the others' claims copied it before: see the store
        assert queue.result(parent).status == "succeeded" and queue.result(parent).value == 7


def test_a_failure_fails_the_waiting_children(queue: Queue) -> None:
    deps = store(queue)
    parent = job(queue, 1)
    first, second = waiting(queue, [parent], 2), waiting(queue, [parent], 3)
    assert deps.waiting_children(parent) == [first, second]
    assert deps.fail_waiting([first, second, parent], "DependencyFailed: parent job 1 failed", "fp") == 2
    assert row(queue, first) == ("failed", 1, 0) and deps.waiting_children(parent) == []
    assert sql(queue, f"SELECT last_error FROM batchq_job WHERE id = {first}")[0][0].startswith(
        "DependencyFailed"
    )


def test_the_sweeps_reads_orphans_and_gone_edges(queue: Queue) -> None:
    deps = store(queue)
    failed, deleted, alive = job(queue, 1), job(queue, 2), job(queue, 3)
    on_failed, on_deleted, on_alive = (
        waiting(queue, [failed]),
        waiting(queue, [deleted]),
        waiting(queue, [alive]),
    )
    sql(queue, f"UPDATE batchq_job SET status = 'failed' WHERE id = {failed}")
    sql(queue, f"DELETE FROM batchq_job WHERE id = {deleted}")
    orphans = sorted(deps.orphans(), key=lambda o: o.child)
    assert orphans == [Orphan(failed, on_failed, "failed"), Orphan(deleted, on_deleted, None)]
    assert deps.gone_edges() == []  # the deleted parent's child still waits: the sweep fails it first
    deps.fail_waiting([on_deleted], "DependencyFailed: parent job gone", "fp")
    assert deps.gone_edges() == [(deleted, on_deleted)]
    assert deps.unlink(deleted, on_deleted) == 1 and deps.unlink(deleted, on_deleted) == 0
    assert (alive, on_alive) in edges(queue) and deps.gone_edges() == []


@pytest.mark.parametrize("parents", [1, 7])
def test_waiting_for_names_up_to_five_parents_and_counts_them_all(queue: Queue, parents: int) -> None:
    ids = [job(queue, n) for n in range(parents)]
    child = waiting(queue, ids)
    sql(queue, f"DELETE FROM batchq_job WHERE id = {ids[0]}")
    found = store(queue).waiting_for(child)
    assert found == WaitingFor(((ids[0], None), *((i, "ready") for i in ids[1:5])), parents)
    assert store(queue).waiting_for(ids[-1]) == WaitingFor((), 0)
