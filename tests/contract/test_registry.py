"""The worker registry (issue 11 part 4): rows written, refreshed and removed by workers, listed
with their liveness, stop requests, and gone workers pruned; every backend, real servers."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from batchq import ConfigError, Queue
from batchq.ops.registry import Registration, list_workers, prune_gone, request_stop
from batchq.runtime.sweeps import gc_processing
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import job_rows, run_query
from tests.support.processes import wait_for


def dead_worker() -> tuple[str, int]:
    """A worker name of this host whose process has ended and whose liveness lock nobody holds."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return f"{socket.gethostname()}:{proc.pid}:deadbeef", proc.pid


def by_hand(queue: Queue, name: str, pid: int, serves: str = "default", seen_ago: int = 0) -> None:
    params = {"name": name, "host": socket.gethostname(), "pid": pid, "serves": serves, "seen_ago": seen_ago}
    run_query(queue, "worker_insert_by_hand", params)


def test_a_worker_is_listed_while_it_runs_and_removed_when_it_exits(queue: Queue, db_url: str) -> None:
    live = Queue(db_url)
    name = f"{socket.gethostname()}:{os.getpid()}:feed0001"
    live.backend.liveness.hold(name)
    registration = Registration(live.backend, name, ["default", "mail"])
    registration.register()
    try:
        job = queue.enqueue("jobs:noop")
        queue.backend.stores.jobs.claim("default", name, "t" * 32)  # the job it runs, as the claim wrote it
        [info] = list_workers(queue.backend)
        assert (info.name, info.pid, info.serves, info.state) == (
            name,
            os.getpid(),
            ["default", "mail"],
            "running",
        )
        assert (info.job_id, info.jobs_held, info.jobs_done) == (job, 1, 0)
        assert info.job_seconds is not None and 0 <= info.job_seconds < 60
        assert registration.seen(done=5, failed=2) is False
        [info] = list_workers(queue.backend)
        assert (info.jobs_done, info.jobs_failed) == (5, 2)
        assert 0 <= info.seen_seconds_ago < 5
    finally:
        registration.unregister()
        live.close()
    assert list_workers(queue.backend) == []


def test_a_worker_run_leaves_no_row(queue: Queue) -> None:
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(5)])
    assert Worker(queue, RunOptions()).run().succeeded == 5
    assert list_workers(queue.backend) == []


def test_stop_is_asked_by_host_queue_or_name(queue: Queue, db_url: str) -> None:
    names = [f"{socket.gethostname()}:{os.getpid()}:0000000{i}" for i in range(3)]
    serves = [["default"], ["mail", "default"], ["mail"]]
    lives = [Queue(db_url) for _ in names]  # each worker's session, holding its liveness
    try:
        for live, name in zip(lives, names):
            live.backend.liveness.hold(name)
        registrations = [Registration(queue.backend, n, s) for n, s in zip(names, serves)]
        for registration in registrations:
            registration.register()
        assert request_stop(queue.backend, queue="mail") == 2
        assert [r.seen(0, 0) for r in registrations] == [False, True, True]
        assert request_stop(queue.backend, name=names[0]) == 1
        assert registrations[0].seen(0, 0) is True
        assert request_stop(queue.backend, host="another-host") == 0
        assert request_stop(queue.backend) == 3  # no filter: every worker
        assert all(info.stop_requested for info in list_workers(queue.backend))
    finally:
        for live in lives:
            live.close()


def test_stop_neither_asks_nor_counts_a_gone_worker(queue: Queue, db_url: str) -> None:
    name, pid = dead_worker()
    by_hand(queue, name, pid)
    live = Queue(db_url)
    try:
        alive = f"{socket.gethostname()}:{os.getpid()}:feed0002"
        live.backend.liveness.hold(alive)
        Registration(queue.backend, alive, ["default"]).register()
        assert request_stop(queue.backend, name=name) == 0
        assert request_stop(queue.backend) == 1
        asked = {info.name: (info.state, info.stop_requested) for info in list_workers(queue.backend)}
        assert asked == {name: ("gone", False), alive: ("stopping", True)}
    finally:
        live.close()


def test_host_and_name_filters_compare_exactly(queue: Queue, db_url: str) -> None:
    """A trailing space is part of the name (MySQL's PAD SPACE collations would ignore it)."""
    host = socket.gethostname()
    name = f"{host}:{os.getpid()}:00000001"
    live = Queue(db_url)  # the worker's session, holding its liveness: only live workers are asked
    try:
        live.backend.liveness.hold(name)
        Registration(queue.backend, name, ["default"]).register()
        assert request_stop(queue.backend, host=host + " ") == 0
        assert request_stop(queue.backend, name=name + " ") == 0
        assert request_stop(queue.backend, host=host.upper() + "X") == 0
        assert [info.stop_requested for info in list_workers(queue.backend)] == [False]
        assert request_stop(queue.backend, host=host, name=name) == 1
    finally:
        live.close()


def test_a_worker_serving_many_long_queue_names_starts(queue: Queue, db_url: str) -> None:
    names = tuple(f"{i:02d}" + "q" * 62 for i in range(100))  # 100 names of 64 characters
    queue.enqueue("jobs:noop", queue=names[-1])
    worker = Worker(queue, RunOptions(queues=names))
    live = Queue(db_url)  # the worker's session, holding its liveness: only live workers are asked
    try:
        live.backend.liveness.hold(worker.name)
        Registration(queue.backend, worker.name, names).register()  # as the worker does when it starts
        [info] = list_workers(queue.backend)
        assert tuple(info.serves) == names
        assert request_stop(queue.backend, queue=names[-1]) == 1
        queue.backend.execute("worker_unregister", {"name": worker.name})
    finally:
        live.close()
    if queue.backend.has_sessions:  # (SQLite's liveness is this process's: nothing to let go)
        # The server lets a closed session's lock go a moment after the close (MySQL: when its
        # thread ends), and this worker has the same name: it would find its lock held.
        wait_for(lambda: not queue.backend.liveness.is_alive(worker.name))
    assert worker.run().succeeded == 1


def test_a_queue_filter_matches_whole_names(queue: Queue) -> None:
    Registration(queue.backend, "h:1:00000001", ["mail-2", "xmail"]).register()
    assert request_stop(queue.backend, queue="mail") == 0
    with pytest.raises(ConfigError, match="bad queue name"):
        request_stop(queue.backend, queue="mail,xmail")


def test_a_worker_asked_to_stop_claims_nothing_more(queue: Queue) -> None:
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(3)])
    worker = Worker(queue, RunOptions())
    Registration(queue.backend, worker.name, ["default"]).register()
    queue.backend.execute("worker_stop", {"name": worker.name})  # as request_stop asks a live one
    assert worker.run().processed == 0  # its first tick reads the request
    assert len(job_rows(queue)) == 3
    assert list_workers(queue.backend) == []  # and it removed its row on the way out


def test_a_dead_workers_row_shows_gone_and_is_pruned_after_a_while(queue: Queue) -> None:
    recent, pid = dead_worker()
    old, old_pid = dead_worker()
    by_hand(queue, recent, pid, seen_ago=5)
    by_hand(queue, old, old_pid, seen_ago=7200)
    assert {info.name: info.state for info in list_workers(queue.backend)} == {recent: "gone", old: "gone"}
    gc_processing(queue)  # prunes rows gone for an hour, quietly
    assert [info.name for info in list_workers(queue.backend)] == [recent]
    assert prune_gone(queue.backend, older_than=0) == 1
    assert list_workers(queue.backend) == []


def test_a_live_workers_old_row_is_never_pruned(queue: Queue, db_url: str) -> None:
    live = Queue(db_url)
    name = f"{socket.gethostname()}:{os.getpid()}:feed0002"
    live.backend.liveness.hold(name)
    try:
        by_hand(queue, name, os.getpid(), seen_ago=7200)  # a long job: its tick has not come yet
        assert prune_gone(queue.backend, older_than=0) == 0
        assert [info.state for info in list_workers(queue.backend)] == ["running"]
    finally:
        live.close()


def test_a_pruned_row_is_written_again_by_its_worker(queue: Queue) -> None:
    registration = Registration(queue.backend, "h:1:00000009", ["default"])
    registration.register()
    registration.unregister()  # as a sweep that could not see the worker's liveness would
    assert registration.seen(1, 0) is False
    assert [info.name for info in list_workers(queue.backend)] == ["h:1:00000009"]


@pytest.mark.parametrize("serves", ["", ",,", "a,\nb", "x" * 300])
def test_odd_rows_written_by_hand_are_listed(queue: Queue, serves: str) -> None:
    name, pid = dead_worker()
    by_hand(queue, name + "\n", pid, serves=serves)
    [info] = list_workers(queue.backend)
    assert info.name == name + "\n" and info.state in ("gone", "unknown")
