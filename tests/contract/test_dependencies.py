"""Job dependencies (issue 30, part 2), on every backend, with in-process workers: enqueue(after=)
and what it refuses, the release when the parents succeed, the failure of dependants, cancel,
gc-error's requeue and delete, explain, chains and groups; after= in enqueue_many,
enqueue_on_commit and the asyncio API, and parents that succeeded and are kept in the history."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from batchq import ConfigError, Queue, QueueFull
from batchq.aio import AsyncQueue
from batchq.jobs import dependencies
from batchq.runtime.sweeps import gc_error, gc_processing
from batchq.runtime.worker import RunOptions, Worker
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
    with pytest.raises(ConfigError, match="no job 999999 waiting, running or succeeded"):
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
    assert not dq.backend.stores.jobs.run_now(child)
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


def count(queue: Queue, table: str) -> int:
    return int(sql(queue, f"SELECT COUNT(*) FROM {table}")[0][0])


def marked(queue: Queue, job_id: int) -> int:
    return int(sql(queue, f"SELECT dependants FROM batchq_job WHERE id = {int(job_id)}")[0][0])


# -- enqueue_many(after=) ---------------------------------------------------------------------


def test_enqueue_many_after_makes_every_job_of_the_batch_wait(dq: Queue) -> None:
    a, b = dq.enqueue(*step(1)), dq.enqueue(*step(2))
    assert dq.enqueue_many("dep_jobs:step", [{"n": n} for n in (3, 4, 5)], after=[b, a, a]) == 3
    children = [int(r[0]) for r in sql(dq, f"SELECT id FROM batchq_job WHERE id > {int(b)} ORDER BY id")]
    assert [status(dq, child)[:2] for child in children] == [("scheduled", 2)] * 3
    assert count(dq, "batchq_dependency") == 6
    assert (marked(dq, a), marked(dq, b)) == (1, 1)
    drain(dq, max_jobs=1)  # one parent: the batch still waits for the other
    assert [status(dq, child)[:2] for child in children] == [("scheduled", 1)] * 3
    drain(dq)
    assert ran(dq)[:2] == [1, 2] and sorted(ran(dq)[2:]) == [3, 4, 5]
    assert count(dq, "batchq_job") == 0 and count(dq, "batchq_dependency") == 0


def test_enqueue_many_after_refuses_before_anything_is_written(dq: Queue) -> None:
    parent = dq.enqueue(*step(1))
    payloads = [{"n": 2}, {"n": 3}]
    with pytest.raises(ConfigError, match=r"no job 999999 waiting, running or succeeded.*keep_for") as raised:
        dq.enqueue_many("dep_jobs:step", payloads, after=[parent, 999999])
    assert "\n" not in str(raised.value)
    with pytest.raises(ConfigError, match="after= and unique_keys= together"):
        dq.enqueue_many("dep_jobs:step", payloads, after=parent, unique_keys=["a", "b"])
    with pytest.raises(ConfigError, match="after= and delay= together"):
        dq.enqueue_many("dep_jobs:step", payloads, after=parent, delay=5)
    with pytest.raises(ConfigError, match="after= is empty"):
        dq.enqueue_many("dep_jobs:step", payloads, after=[])
    assert count(dq, "batchq_job") == 1 and count(dq, "batchq_dependency") == 0
    assert marked(dq, parent) == 0  # not even the known parent's mark


def test_enqueue_many_after_joins_the_applications_transaction(dq: Queue, db_url: str) -> None:
    parent = dq.enqueue(*step(1))
    conn = app_connection(db_url)
    try:
        assert dq.enqueue_many("dep_jobs:step", [{"n": 2}, {"n": 3}], after=parent, conn=conn) == 2
        conn.rollback()
        assert count(dq, "batchq_job") == 1 and count(dq, "batchq_dependency") == 0
        assert marked(dq, parent) == 0
        assert dq.enqueue_many("dep_jobs:step", [{"n": 2}, {"n": 3}], after=parent, conn=conn) == 2
        conn.commit()
    finally:
        conn.close()
    assert count(dq, "batchq_dependency") == 2
    drain(dq)
    assert ran(dq)[0] == 1 and sorted(ran(dq)) == [1, 2, 3]


def test_enqueue_many_after_in_a_bounded_queue_is_bounded(dq: Queue) -> None:
    parent = dq.enqueue(*step(1))
    dq.configure("small", max_length=2, overflow="reject")
    assert dq.enqueue_many("dep_jobs:step", [{"n": 2}, {"n": 3}], queue="small", after=parent) == 2
    with pytest.raises(QueueFull):  # the waiting jobs count against the bound
        dq.enqueue_many("dep_jobs:step", [{"n": 4}], queue="small", after=parent)
    assert count(dq, "batchq_job") == 3 and count(dq, "batchq_dependency") == 2


def test_enqueue_after_in_a_bounded_queue_is_bounded_as_any_job(dq: Queue) -> None:
    parent = dq.enqueue(*step(1))
    dq.configure("small", max_length=1, overflow="reject")
    waiting = dq.enqueue(*step(2), queue="small", after=parent)
    with pytest.raises(QueueFull):  # the waiting job counts against the bound
        dq.enqueue(*step(3), queue="small", after=parent)
    with pytest.raises(ConfigError, match="no job 999999"):  # refused before any room is made
        dq.enqueue(*step(4), queue="small", after=999999)
    dq.configure("small", max_length=1, overflow="drop_oldest")
    newer = dq.enqueue(*step(5), queue="small", after=parent)
    assert status(dq, waiting)[0] == "failed"  # dropped to make room, as any oldest job
    assert count(dq, "batchq_job") == 3 and count(dq, "batchq_dependency") == 2
    drain(dq, queues=("default", "small"))
    assert ran(dq) == [1, 5] and status(dq, newer)[0] == "gone"


def test_enqueue_many_after_is_refused_before_a_bound_drops_anything(
    dq: Queue, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dq.configure("small", max_length=1)  # drop_oldest: making room fails the oldest waiting job
    oldest = dq.enqueue(*step(1), queue="small")
    conn = app_connection(db_url)
    try:  # in the app's transaction, which a refusal must leave as it was
        with pytest.raises(ConfigError, match="no job 999999"):
            dq.enqueue_many("dep_jobs:step", [{"n": 2}], queue="small", after=999999, conn=conn)
        cur = conn.cursor()
        cur.execute(f"SELECT status FROM batchq_job WHERE id = {int(oldest)}")
        assert cur.fetchall()[0][0] == "ready"  # not dropped for a batch that was refused
        cur.close()
        conn.commit()
    finally:
        conn.close()
    monkeypatch.setattr(dependencies, "MAX_EDGES", 3)
    with pytest.raises(ConfigError, match="2 jobs times 2 parents is 4 links, at most 3"):
        dq.enqueue_many("dep_jobs:step", [{"n": 2}, {"n": 3}], queue="small", after=[oldest, 999999])
    assert status(dq, oldest)[0] == "ready" and count(dq, "batchq_job") == 1


# -- parents that succeeded, kept in the history ----------------------------------------------


def kept_and_done(dq: Queue, n: int, **options: Any) -> int:
    """A job of a queue that keeps its history, run to its end (gone from the job table)."""
    dq.configure("kept", keep_for="1d")
    job_id = dq.enqueue(*step(n), queue="kept", **options)
    drain(dq, queues=("kept",))
    assert status(dq, job_id)[0] == "gone"
    return job_id


def test_a_parent_that_succeeded_and_is_kept_in_the_history_leaves_the_child_runnable(dq: Queue) -> None:
    done = kept_and_done(dq, 1)
    assert dq.result(done).status == "succeeded"
    child = dq.enqueue(*step(2), after=done)
    assert status(dq, child)[:2] == ("ready", None)  # nothing to wait for: due at once
    assert count(dq, "batchq_dependency") == 0
    assert dq.enqueue_many("dep_jobs:step", [{"n": 3}], after=[done]) == 1
    running = dq.enqueue(*step(4))
    both = dq.enqueue(*step(5), after=[done, running])  # waits for the one that has not succeeded
    assert status(dq, both)[:2] == ("scheduled", 1)
    assert [int(r[0]) for r in sql(dq, "SELECT parent_id FROM batchq_dependency")] == [running]
    drain(dq)
    assert sorted(ran(dq)) == [1, 2, 3, 4, 5] and ran(dq)[-1] == 5


def test_a_parent_that_ended_without_success_is_refused_from_its_history_too(dq: Queue) -> None:
    dq.configure("kept", keep_for="1d")
    failed = dq.enqueue("dep_jobs:fails", {"n": 1}, queue="kept", max_errors=1)
    drain(dq, queues=("kept",))
    gc_error(dq, "delete", ids=[failed])  # its row gone; its history says failed
    assert status(dq, failed)[0] == "gone" and dq.result(failed).status == "failed"
    with pytest.raises(
        ConfigError, match=f"job {failed} failed for good and was deleted .*enqueue without it"
    ):
        dq.enqueue(*step(2), after=failed)
    cancelled = dq.enqueue(*step(3), queue="kept")
    assert dq.cancel(cancelled)
    with pytest.raises(ConfigError, match=f"job {cancelled} was cancelled"):
        dq.enqueue_many("dep_jobs:step", [{"n": 4}], after=[cancelled])
    assert count(dq, "batchq_job") == 0 and count(dq, "batchq_dependency") == 0


def test_a_parent_gone_without_history_is_unknown_and_named_with_the_fix(dq: Queue) -> None:
    parent = dq.enqueue(*step(1))
    alive = dq.enqueue(*step(2), queue="later")
    drain(dq, queues=("default",))  # succeeded, not kept: nothing tells it from an unknown id
    with pytest.raises(ConfigError) as raised:
        dq.enqueue(*step(3), after=[alive, parent])
    message = str(raised.value)
    assert f"no job {parent} waiting, running or succeeded" in message
    assert "Queue.configure(queue, keep_for=...)" in message and "\n" not in message
    assert count(dq, "batchq_job") == 1 and marked(dq, alive) == 0


# -- enqueue_on_commit(after=) and the asyncio API -----------------------------------------------


@pytest.fixture
def app_engine(tmp_path: Path) -> Iterator[sa.Engine]:
    """The app's own database (enqueue_on_commit is for a queue in another one)."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'app.db'}")
    yield engine
    engine.dispose()


def test_enqueue_on_commit_after_writes_the_waiting_job_at_the_commit(
    dq: Queue, app_engine: sa.Engine
) -> None:
    parent = dq.enqueue(*step(1))
    with Session(app_engine) as session:
        dq.enqueue_on_commit(session, *step(2), after=[parent])
        assert count(dq, "batchq_job") == 1 and marked(dq, parent) == 0  # nothing before the commit
        session.commit()
    (child,) = [int(r[0]) for r in sql(dq, f"SELECT id FROM batchq_job WHERE id <> {int(parent)}")]
    assert status(dq, child)[:2] == ("scheduled", 1) and marked(dq, parent) == 1
    drain(dq)
    assert ran(dq) == [1, 2]


def test_enqueue_on_commit_after_rolled_back_writes_and_marks_nothing(
    dq: Queue, app_engine: sa.Engine
) -> None:
    parent = dq.enqueue(*step(1))
    with Session(app_engine) as session:
        dq.enqueue_on_commit(session, *step(2), after=parent)
        session.rollback()
    assert count(dq, "batchq_job") == 1 and count(dq, "batchq_dependency") == 0
    assert marked(dq, parent) == 0


def test_enqueue_on_commit_after_checks_the_parents_at_the_call_and_at_the_commit(
    dq: Queue, app_engine: sa.Engine
) -> None:
    with Session(app_engine) as session:
        with pytest.raises(ConfigError, match="no job 999999 waiting, running or succeeded"):
            dq.enqueue_on_commit(session, *step(1), after=[999999])
        with pytest.raises(ConfigError, match="after= and delay= together"):
            dq.enqueue_on_commit(session, *step(1), after=[999999], delay=5)
        parent = dq.enqueue(*step(2))
        dq.enqueue_on_commit(session, *step(3), after=parent)
        drain(dq)  # the parent succeeds (its history not kept) before the app commits
        with pytest.raises(ConfigError, match=f"no job {parent} waiting, running or succeeded"):
            session.commit()  # read again at the write: refused there, raised where the app commits
    assert ran(dq) == [2] and count(dq, "batchq_job") == 0
    done = kept_and_done(dq, 4)
    with Session(app_engine) as session:
        dq.enqueue_on_commit(session, *step(5), after=done)  # kept in the history: runnable at once
        session.commit()
    drain(dq)
    assert ran(dq) == [2, 4, 5]


def test_the_async_api_takes_after(dq: Queue, db_url: str) -> None:
    parent = dq.enqueue(*step(1))

    async def enqueue() -> tuple[int, int]:
        async with AsyncQueue(db_url, task_modules=MODULES) as aq:
            child = await aq.enqueue(*step(2), after=parent)
            many = await aq.enqueue_many("dep_jobs:step", [{"n": 3}, {"n": 4}], after=[parent, child])
            with pytest.raises(ConfigError, match="no job 999999"):
                await aq.enqueue(*step(5), after=999999)
            return child, many

    child, many = asyncio.run(enqueue())
    assert status(dq, child)[:2] == ("scheduled", 1) and many == 2
    assert count(dq, "batchq_dependency") == 1 + 4
    drain(dq)
    assert ran(dq)[:2] == [1, 2] and sorted(ran(dq)) == [1, 2, 3, 4]


@pytest.mark.backends("mysql", "postgresql")  # SQLite's writers take turns: no read-then-mark race
def test_a_parent_finishing_between_the_read_and_the_mark_is_read_again(
    dq: Queue, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent succeeds (on another connection, its history kept) right after the enqueue read
    it: the mark misses it, the second read finds its history record, and the child is written
    due at once rather than refused."""
    dq.configure("kept", keep_for="1d")
    parent = dq.enqueue(*step(1), queue="kept")
    deps = dq.backend.stores.dependencies
    read, reads = deps.parents, []

    def read_then_finish(ids: Any, conn: Any = None) -> Any:
        found = read(ids, conn)
        if not reads:  # a worker finishes the parent between this read and the mark
            other = Queue(db_url, task_modules=MODULES)
            drain(other, queues=("kept",))
            other.close()
        reads.append(found[parent])
        return found

    monkeypatch.setattr(deps, "parents", read_then_finish)
    child = dq.enqueue(*step(2), after=parent)
    assert [(found.status, found.ended) for found in reads] == [("ready", False), ("succeeded", True)]
    assert status(dq, child)[:2] == ("ready", None) and count(dq, "batchq_dependency") == 0
