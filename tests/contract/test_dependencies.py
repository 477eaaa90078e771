"""Job dependencies (issue 30, part 2), on every backend, with in-process workers: enqueue(after=)
and what it refuses, the release when the parents succeed, the failure of dependants, cancel,
gc-error's requeue and delete, explain, chains and groups."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from batchq import ConfigError, Queue
from batchq.sweeps import gc_error, gc_processing
from batchq.worker import RunOptions, Worker
from tests.apps.dep_jobs import LEDGER_CREATE
from tests.support.db import app_connection, run_query, sql

MODULES = ["dep_jobs"]


@pytest.fixture
def dq(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Queue]:
    monkeypatch.setenv("BATCHQ_URL", db_url)
    q = Queue(db_url, task_modules=MODULES)
    sql(q, LEDGER_CREATE)
    sql(q, "DELETE FROM test_dep_ledger")
    yield q
    q.close()


def drain(queue: Queue, **options: Any) -> Worker:
    worker = Worker(queue, RunOptions(**options))
    worker.run()
    return worker


def ran(queue: Queue) -> list[int]:
    """The job numbers in the order they ran."""
    rows = sql(queue, "SELECT n, started FROM test_dep_ledger")
    return [int(n) for n, _ in sorted(rows, key=lambda row: float(row[1]))]


def status(queue: Queue, job_id: int) -> tuple[str, Any, str | None]:
    rows = sql(queue, f"SELECT status, parents_left, last_error FROM batchq_job WHERE id = {int(job_id)}")
    if not rows:
        return ("gone", None, None)
    state, left, error = rows[0]
    return (str(state), None if left is None else int(left), None if error is None else str(error))


def step(n: int) -> tuple[str, dict[str, int]]:
    return ("dep_jobs:step", {"n": n})


def test_a_job_waits_for_every_parent_then_runs(dq: Queue) -> None:
    a, b = dq.enqueue(*step(1)), dq.enqueue(*step(2))
    child = dq.enqueue(*step(3), after=[a, b])
    assert status(dq, child)[:2] == ("scheduled", 2)
    explained = dq.explain(child)
    assert (explained.state, explained.delay_reason, explained.waiting_for) == ("delayed", "parents", (a, b))
    assert f"waiting for 2 parents to succeed: job {a} (ready), job {b} (ready)" in explained.summary
    drain(dq)
    assert ran(dq) == [1, 2, 3]
    assert sql(dq, "SELECT COUNT(*) FROM batchq_job")[0][0] == 0
    assert sql(dq, "SELECT COUNT(*) FROM batchq_dependency")[0][0] == 0


def test_a_parent_that_succeeds_releases_its_child_in_its_own_finish(dq: Queue) -> None:
    parent = dq.enqueue(*step(1))
    child = dq.enqueue(*step(2), after=parent)
    drain(dq, max_jobs=1)  # the parent only
    assert ran(dq) == [1]
    assert status(dq, child)[:2] == ("ready", 0)
    drain(dq)
    assert ran(dq) == [1, 2]


@pytest.mark.parametrize(
    ("after", "message"),
    [
        ([], "after= is empty"),
        (["7"], "bad after= job id '7'"),
        ([True], "bad after= job id True"),
        ("12", "bad after='12'"),
        ([0], "no job 0"),
    ],
)
def test_bad_after_is_refused_before_anything_is_written(dq: Queue, after: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        dq.enqueue(*step(1), after=after)
    assert "\n" not in str(raised.value)
    assert sql(dq, "SELECT COUNT(*) FROM batchq_job")[0][0] == 0


def test_unknown_and_failed_parents_are_refused(dq: Queue) -> None:
    with pytest.raises(ConfigError, match="no job 999999 waiting or running"):
        dq.enqueue(*step(1), after=[999999])
    failed = dq.enqueue("dep_jobs:fails", {"n": 1}, max_errors=1)
    drain(dq)
    with pytest.raises(ConfigError, match=f"job {failed} failed for good"):
        dq.enqueue(*step(2), after=failed)
    assert sql(dq, "SELECT COUNT(*) FROM batchq_job")[0][0] == 1  # the failed parent only
    assert sql(dq, "SELECT COUNT(*) FROM batchq_dependency")[0][0] == 0
    with pytest.raises(ConfigError, match="delay= together"):
        dq.enqueue(*step(3), after=failed, delay=5)


def test_a_parent_failing_for_good_fails_its_dependants_with_the_reason(dq: Queue) -> None:
    parent = dq.enqueue("dep_jobs:fails", {"n": 1}, max_errors=1)
    child = dq.enqueue(*step(2), after=parent)
    grandchild = dq.enqueue(*step(3), after=child)
    drain(dq)
    assert ran(dq) == []
    assert status(dq, child)[0] == "failed"
    assert f"parent job {parent} failed for good" in (status(dq, child)[2] or "")
    assert f"parent job {child} failed for good" in (status(dq, grandchild)[2] or "")
    assert dq.result(grandchild).status == "failed"
    # Requeued together, the dependants wait again, and all run in order.
    requeued = gc_error(dq, "requeue")
    assert {job.id for job in requeued} == {parent, child, grandchild}
    assert status(dq, child)[:2] == ("scheduled", 1)
    sql(dq, f"UPDATE batchq_job SET task = 'dep_jobs:step' WHERE id = {int(parent)}")
    drain(dq)
    assert ran(dq) == [1, 2, 3]


def test_deleting_a_failed_parent_leaves_its_dependants_failed_and_free(dq: Queue) -> None:
    parent = dq.enqueue("dep_jobs:fails", {"n": 1}, max_errors=1)
    child = dq.enqueue(*step(2), after=parent)
    drain(dq)
    gc_error(dq, "delete", ids=[parent])
    assert status(dq, child)[0] == "failed"
    assert sql(dq, "SELECT COUNT(*) FROM batchq_dependency")[0][0] == 0
    gc_error(dq, "requeue", ids=[child])  # runs without its deleted parent: the operator's call
    drain(dq)
    assert ran(dq) == [2]


def test_cancel_and_purge_of_a_parent_fail_its_dependants(dq: Queue) -> None:
    first = dq.enqueue(*step(1), queue="a")
    child = dq.enqueue(*step(2), after=first, queue="b")
    assert dq.cancel(first)
    assert status(dq, child)[0] == "failed"
    assert "was cancelled" in (status(dq, child)[2] or "")
    second = dq.enqueue(*step(3), queue="a")
    other = dq.enqueue(*step(4), after=second, queue="b")
    dq.purge("a")
    assert status(dq, other)[0] == "scheduled"  # purge knows nothing of it: the sweep repairs
    gc_processing(dq)
    assert status(dq, other)[0] == "failed"
    assert "was deleted before it succeeded" in (status(dq, other)[2] or "")


def test_a_parent_that_expires_fails_its_dependants(dq: Queue) -> None:
    """An expired parent never runs (enqueue(expires=)): its dependants fail with it, in the
    transaction that fails it, as when it fails for good."""
    parent = dq.enqueue(*step(1), expires="1h")
    child = dq.enqueue(*step(2), after=parent)
    grandchild = dq.enqueue(*step(3), after=child)
    run_query(dq, "job_expired", {"id": int(parent)})
    drain(dq)
    assert ran(dq) == []
    assert status(dq, parent)[::2] == ("failed", "expired")
    assert status(dq, child)[::2] == ("failed", f"DependencyFailed: parent job {parent} expired")
    assert status(dq, grandchild)[::2] == ("failed", f"DependencyFailed: parent job {child} failed for good")


def test_a_waiting_job_cannot_be_made_due_by_hand(dq: Queue) -> None:
    parent = dq.enqueue(*step(1))
    child = dq.enqueue(*step(2), after=parent)
    assert dq.backend.execute("dashboard_job_run_now", {"id": child}) == 0
    drain(dq, max_jobs=1)
    assert ran(dq) == [1]


def test_a_chain_runs_in_order(dq: Queue) -> None:
    jobs = dq.chain([step(n) for n in range(1, 6)])
    assert len(jobs) == 5
    drain(dq)
    assert ran(dq) == [1, 2, 3, 4, 5]


def test_a_group_callback_runs_once_with_the_members_results(dq: Queue) -> None:
    group = dq.group([step(n) for n in range(1, 11)], then=("dep_jobs:collect", {"n": 100}))
    assert group.callback is not None
    drain(dq, batch_size=3)
    assert sorted(ran(dq)) == [*range(1, 11), 100]
    assert ran(dq)[-1] == 100
    assert [int(row[0]) for row in sql(dq, "SELECT total FROM test_dep_ledger WHERE n = 100")] == [55]
    assert dq.result(group.members[0]).value == 1


def test_a_failed_group_member_fails_the_callback(dq: Queue) -> None:
    group = dq.group(
        [step(1), ("dep_jobs:fails", {"n": 2}, {"max_errors": 1})], then=("dep_jobs:collect", {"n": 9})
    )
    drain(dq)
    assert group.callback is not None
    assert status(dq, group.callback)[0] == "failed"
    assert 9 not in ran(dq)


def test_bad_group_and_chain_steps_are_refused(dq: Queue) -> None:
    with pytest.raises(ConfigError, match="has no steps"):
        dq.chain([])
    with pytest.raises(ConfigError, match="bad group step"):
        dq.group(["dep_jobs:step"])
    with pytest.raises(ConfigError, match="payload must be a dict"):
        dq.group([step(1)], then=("dep_jobs:collect", [1]))
    assert sql(dq, "SELECT COUNT(*) FROM batchq_job")[0][0] == 0


def test_after_joins_the_applications_transaction(dq: Queue, db_url: str) -> None:
    parent = dq.enqueue(*step(1))
    conn = app_connection(db_url)
    try:
        dq.enqueue(*step(2), after=parent, conn=conn)
        conn.rollback()  # nothing of it stays: no child, no link, the parent unmarked
        assert sql(dq, "SELECT COUNT(*) FROM batchq_job")[0][0] == 1
        assert sql(dq, "SELECT COUNT(*) FROM batchq_dependency")[0][0] == 0
        child = dq.enqueue(*step(2), after=parent, conn=conn)
        conn.commit()
    finally:
        conn.close()
    assert status(dq, child)[:2] == ("scheduled", 1)
    drain(dq)
    assert ran(dq) == [1, 2]
