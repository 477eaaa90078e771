"""Job dependencies (issue 30, part 2) with real `batchq run` processes, on every backend: a
3-level graph of 200 jobs drained by 4 workers runs each job once and after its parents (read
from the jobs' own ledger, with times); a group of 100 members on 4 workers fires its callback
exactly once, also with SIGKILLs landing among the finishes and with the last finisher killed
between its work and its commit."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest

from batchq import Queue
from tests.acceptance.test_reliability import _kill_session_running, _lock_row
from tests.apps.dep_jobs import LEDGER_CREATE
from tests.support.db import sql
from tests.support.harness import WorkerPool, sweep_after_crash, worker_name
from tests.support.processes import run_batchq, start_batchq, wait_for

ENV = {"BATCHQ_TASK_MODULES": "dep_jobs"}


@pytest.fixture
def dq(db_url: str) -> Iterator[Queue]:
    q = Queue(db_url, task_modules=["dep_jobs"])
    sql(q, LEDGER_CREATE)
    sql(q, "DELETE FROM test_dep_ledger")
    yield q
    q.close()


def runs(queue: Queue) -> dict[int, list[tuple[float, float]]]:
    """Each job number's runs: (started, ended), on this host's clock."""
    found: dict[int, list[tuple[float, float]]] = {}
    for n, started, ended in sql(queue, "SELECT n, started, ended FROM test_dep_ledger"):
        found.setdefault(int(n), []).append((float(started), float(ended)))
    return found


def callback_totals(queue: Queue, n: int) -> list[int]:
    return [int(row[0]) for row in sql(queue, f"SELECT total FROM test_dep_ledger WHERE n = {n}")]


def remaining(queue: Queue) -> int:
    return int(sql(queue, "SELECT COUNT(*) FROM batchq_job")[0][0])


@pytest.mark.slow
def test_a_three_level_graph_of_200_jobs_on_4_workers(dq: Queue, db_url: str) -> None:
    rng = random.Random(30)
    parents: dict[int, list[int]] = {}  # job number -> its parents' numbers
    ids: dict[int, int] = {}
    for n in range(200):
        if n < 50:
            chosen: list[int] = []
        elif n < 125:
            chosen = rng.sample(range(50), 2)
        else:
            chosen = rng.sample(range(125), rng.randint(1, 3))
        parents[n] = chosen
        payload = {"n": n, "sleep": rng.choice([0, 0, 0.005, 0.02])}
        after = [ids[p] for p in chosen] or None
        ids[n] = dq.enqueue("dep_jobs:step", payload, after=after)
    pool = WorkerPool(db_url, "--wait", "3", "--poll-interval", "0.05", **ENV)
    pool.start(4)
    pool.wait(timeout=300)
    assert all(code == 0 for code, _ in pool.logs()), pool.logs()
    found = runs(dq)
    assert sorted(found) == list(range(200))
    assert all(len(found[n]) == 1 for n in found), "a job ran twice"
    for child, its_parents in parents.items():
        for parent in its_parents:
            assert found[parent][0][1] <= found[child][0][0], (
                f"job {child} started before parent {parent} ended"
            )
    assert remaining(dq) == 0
    assert int(sql(dq, "SELECT COUNT(*) FROM batchq_dependency")[0][0]) == 0


@pytest.mark.slow
def test_a_group_of_100_on_4_workers_fires_its_callback_once(dq: Queue, db_url: str) -> None:
    members = [("dep_jobs:step", {"n": n, "sleep": 0.002 * (n % 3)}) for n in range(1, 101)]
    group = dq.group(members, then=("dep_jobs:collect", {"n": 1000}))
    pool = WorkerPool(db_url, "--wait", "3", "--poll-interval", "0.05", **ENV)
    pool.start(4)
    pool.wait(timeout=300)
    assert callback_totals(dq, 1000) == [5050]  # once, with every member's result
    found = runs(dq)
    last_member_end = max(found[n][0][1] for n in range(1, 101))
    assert found[1000][0][0] >= last_member_end
    assert group.callback is not None and dq.result(group.callback).status == "unknown"  # done, not kept
    assert remaining(dq) == 0


@pytest.mark.slow
def test_a_group_survives_sigkills_among_its_finishes(dq: Queue, db_url: str) -> None:
    rng = random.Random(7)
    members = [("dep_jobs:step", {"n": n, "sleep": 0.01}, {"max_errors": 100}) for n in range(1, 101)]
    dq.group(members, then=("dep_jobs:collect", {"n": 1000}))
    pool = WorkerPool(db_url, "--wait", "2", "--poll-interval", "0.05", **ENV)
    pool.start(4)
    kills = 0
    while kills < 12 and not callback_totals(dq, 1000):
        time.sleep(rng.uniform(0.05, 0.4))
        pool.reap()
        if not pool.running:
            break
        pid = pool.kill_one()
        kills += 1
        sweep_after_crash(dq, worker_name(pid))  # its claimed member goes back at once
        pool.start(1)
    pool.wait(timeout=300)
    for _ in range(3):  # what the last kills left claimed: swept and run
        if callback_totals(dq, 1000):
            break
        for proc, _ in pool.finished:
            sweep_after_crash(dq, worker_name(proc.pid))
        ran = run_batchq(db_url, "run", "--wait", "2", **ENV)
        assert ran.returncode == 0, ran.stderr
    assert kills >= 3
    assert callback_totals(dq, 1000) == [5050]  # exactly once, whatever the kills interrupted
    assert sorted(n for n in runs(dq) if n != 1000) == list(range(1, 101))
    assert remaining(dq) == 0


@pytest.mark.slow
def test_the_last_finisher_killed_between_its_work_and_its_commit(dq: Queue, db_url: str) -> None:
    members = [
        ("dep_jobs:step", {"n": 1}),
        ("dep_jobs:step", {"n": 2}),
        ("dep_jobs:step", {"n": 3, "sleep_after": 1.5}),
    ]
    group = dq.group(members, then=("dep_jobs:collect", {"n": 9}))
    assert group.callback is not None
    first = run_batchq(db_url, "run", "--max-jobs", "2", **ENV)
    assert first.returncode == 0, first.stderr
    assert sorted(runs(dq)) == [1, 2]
    [(left,)] = sql(dq, f"SELECT parents_left FROM batchq_job WHERE id = {int(group.callback)}")
    assert int(left) == 1
    worker = start_batchq(db_url, "run", "--wait", "30", **ENV)
    wait_for(lambda: 3 in runs(dq))  # its work is done (it returns 1.5 s later)
    blocker = _lock_row(dq, group.callback)  # the last member's finish must wait for this lock
    time.sleep(2.5)  # it returned: the worker is in its finish, waiting
    worker.kill()
    worker.wait()
    dialect = dq.backend.dialect
    if dialect != "sqlite":  # the server would go on with the statement: end its session, as a crash does
        # Blocked in its finish (deps_children), or on MySQL/MariaDB first in the promotion that
        # a claim finding nothing runs (its scan of batchq_job_due waits for the locked row):
        # either way after the work, before the finish commits.
        _kill_session_running(dialect, "SELECT id FROM batchq_job", "UPDATE batchq_job SET status = 'ready'")
    blocker.rollback()
    blocker.close()
    [(status, left)] = sql(
        dq, f"SELECT status, parents_left FROM batchq_job WHERE id = {int(group.callback)}"
    )
    assert (str(status), int(left)) == ("scheduled", 1)  # nothing of the finish committed
    assert len(sweep_after_crash(dq, worker_name(worker.pid)).requeued) == 1
    again = run_batchq(db_url, "run", **ENV)
    assert again.returncode == 0, again.stderr
    assert len(runs(dq)[3]) == 2  # the last member ran again: the crash came after its work
    assert callback_totals(dq, 9) == [6]  # the callback ran once, with every result
    assert remaining(dq) == 0
