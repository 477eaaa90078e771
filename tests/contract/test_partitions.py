"""Partitioned claims (issue 10 part 3): jobs spread over partitions at insert, workers leasing one
partition at a time; every backend, real servers."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from batchq import ConfigError, Queue
from batchq.coordination.partitions import PartitionLease
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import job_rows, run_query


def dead_worker() -> str:
    """A worker name of this host whose process has ended and whose liveness lock nobody holds."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return f"{socket.gethostname()}:{proc.pid}:deadbeef"


def live_worker(suffix: str) -> str:
    """A worker name of this process (alive on SQLite; on a server, once its lock is held)."""
    return f"{socket.gethostname()}:{os.getpid()}:{suffix}"


@pytest.fixture
def parted(queue: Queue) -> Iterator[Queue]:
    """The queue with 4 partitions; partitioned claims switched off again afterwards (the index
    stays out of the other tests' plans)."""
    queue.set_partitions(4)
    yield queue
    queue.set_partitions(0)


def partition_worker(queue: Queue, **options: object) -> Worker:
    return Worker(queue, RunOptions(claim="partition", **options))  # type: ignore[arg-type]


def per_partition(queue: Queue) -> dict[int, int]:
    return {int(p): int(n) for p, n in run_query(queue, "jobs_per_partition")}


def test_jobs_are_spread_over_every_partition(parted: Queue) -> None:
    for n in range(100):
        parted.enqueue("jobs:noop", {"n": n})
    parted.enqueue_many("jobs:noop", [{"n": n} for n in range(100, 300)])
    counts = per_partition(parted)
    assert set(counts) == {0, 1, 2, 3}  # 300 jobs: each partition gets some (p of a miss ~ 1e-37)
    assert sum(counts.values()) == 300


def test_without_partitions_every_job_is_in_partition_0(queue: Queue) -> None:
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(20)])
    assert per_partition(queue) == {0: 20}
    assert queue.partitions() == []


def test_a_partition_worker_drains_every_partition_once(parted: Queue) -> None:
    parted.enqueue_many("jobs:noop", [{"n": n} for n in range(120)])
    ids = [row["id"] for row in job_rows(parted)]
    worker = partition_worker(parted, jobs_per_lease=7)
    summary = worker.run()
    assert summary.succeeded == 120
    assert sorted(summary.job_ids) == ids  # each once
    assert job_rows(parted) == []
    lease = worker._claims.lease
    assert lease is not None and lease.leases >= 120 // 7  # moved on every 7 jobs
    assert not any(info.held for info in parted.partitions())  # released on the way out


def test_batch_claims_stay_within_the_partition(parted: Queue) -> None:
    parted.enqueue_many("jobs:noop", [{"n": n} for n in range(60)])
    summary = partition_worker(parted, batch_size=10).run()
    assert summary.succeeded == 60
    assert len(set(summary.job_ids)) == 60
    assert job_rows(parted) == []


def test_a_worker_without_partitions_set_up_is_refused(queue: Queue) -> None:
    queue.enqueue("jobs:noop")
    with pytest.raises(ConfigError, match=r"batchq partitions set 16"):
        partition_worker(queue).run()
    assert len(job_rows(queue)) == 1  # nothing claimed


@pytest.mark.parametrize("count", [-1, 1025, True, 2.0, "4"])
def test_bad_partition_counts_are_refused(queue: Queue, count: object) -> None:
    with pytest.raises(ConfigError, match="bad partition count"):
        queue.set_partitions(count)  # type: ignore[arg-type]
    assert queue.partitions() == []


def test_fewer_partitions_move_the_waiting_jobs_of_the_dropped_ones(parted: Queue) -> None:
    parted.enqueue_many("jobs:noop", [{"n": n} for n in range(200)])
    assert set(per_partition(parted)) == {0, 1, 2, 3}
    parted.set_partitions(2)
    assert set(per_partition(parted)) == {0, 1}
    assert [info.partition for info in parted.partitions()] == [0, 1]
    assert partition_worker(parted).run().succeeded == 200


def test_a_job_in_a_partition_that_does_not_exist_is_moved_and_run(parted: Queue) -> None:
    """A producer that still knew a larger count, or a row written by hand."""
    stray = parted.enqueue("jobs:noop", {"n": 7})
    run_query(parted, "job_set_partition", {"id": stray, "partition": 60_000})
    assert list(partition_worker(parted).run().job_ids) == [stray]


def test_a_dead_workers_lease_is_taken_at_once(parted: Queue) -> None:
    job, dead = parted.enqueue("jobs:noop", {"n": 1}), dead_worker()
    run_query(parted, "job_set_partition", {"id": job, "partition": 2})
    run_query(parted, "partition_lease_by_hand", {"partition": 2, "worker": dead, "seconds": 3600})
    assert [info.holder for info in parted.partitions() if info.held] == [dead]
    assert list(partition_worker(parted).run().job_ids) == [job]  # not in an hour: its holder is dead


def test_a_live_workers_lease_is_left_alone(parted: Queue, db_url: str) -> None:
    live = Queue(db_url)
    live_name = live_worker("cafe0001")
    live.backend.liveness.hold(live_name)  # a live worker holding partition 2
    try:
        held = parted.enqueue("jobs:noop", {"n": 1})
        free = parted.enqueue("jobs:noop", {"n": 2})
        run_query(parted, "job_set_partition", {"id": held, "partition": 2})
        run_query(parted, "job_set_partition", {"id": free, "partition": 3})
        run_query(parted, "partition_lease_by_hand", {"partition": 2, "worker": live_name, "seconds": 3600})
        assert list(partition_worker(parted, max_seconds=1).run().job_ids) == [free]
        assert [row["id"] for row in job_rows(parted)] == [held]  # waits for the live lease
    finally:
        live.close()


def test_a_worker_waits_for_a_leased_partition_with_work_rather_than_exit(parted: Queue, db_url: str) -> None:
    """No free partition holds work but a leased one does: the queue is not empty, so the worker
    (no --wait) polls until the lease runs out, then runs the job."""
    live = Queue(db_url)
    live_name = live_worker("cafe0003")
    live.backend.liveness.hold(live_name)
    try:
        held = parted.enqueue("jobs:noop", {"n": 1})
        run_query(parted, "job_set_partition", {"id": held, "partition": 2})
        run_query(parted, "partition_lease_by_hand", {"partition": 2, "worker": live_name, "seconds": 2})
        started = time.monotonic()
        assert list(partition_worker(parted, poll_interval=0.2).run().job_ids) == [held]
        assert time.monotonic() - started >= 1.0  # it waited for the lease, not for a minute
    finally:
        live.close()


def test_a_lease_the_worker_still_holds_is_free_to_it(parted: Queue) -> None:
    """A release that failed midway (the row still names the worker) does not lock the worker
    out of its own partition until the lease runs out."""
    job = parted.enqueue("jobs:noop", {"n": 1})
    run_query(parted, "job_set_partition", {"id": job, "partition": 1})
    lease = PartitionLease(parted.backend, "host:1:lease0003")
    run_query(parted, "partition_lease_by_hand", {"partition": 1, "worker": lease.worker, "seconds": 3600})
    assert lease.current(["default"]) == 1
    lease.release()
    assert not any(info.held for info in parted.partitions())


def test_an_expired_lease_is_anyones(parted: Queue, db_url: str) -> None:
    live = Queue(db_url)
    live_name = live_worker("cafe0002")
    live.backend.liveness.hold(live_name)
    try:
        job = parted.enqueue("jobs:noop", {"n": 3})
        run_query(parted, "job_set_partition", {"id": job, "partition": 1})
        run_query(parted, "partition_lease_by_hand", {"partition": 1, "worker": live_name, "seconds": -1})
        assert partition_worker(parted).run().succeeded == 1
    finally:
        live.close()


def test_a_lease_moves_on_least_recently_used_first(parted: Queue) -> None:
    parted.enqueue_many("jobs:noop", [{"i": i} for i in range(200)])
    lease = PartitionLease(parted.backend, "host:1:lease0001", jobs_per_lease=1)
    seen = []
    for _ in range(8):
        seen.append(lease.current(["default"]))
        lease.claimed(1)
        time.sleep(0.002)  # past SQLite's millisecond clock: each release a later time
    lease.release()
    assert sorted(seen[:4]) == [0, 1, 2, 3]  # each partition once before any twice
    assert seen[4:] == seen[:4]


def test_renew_keeps_the_lease_and_a_lost_lease_is_given_up(parted: Queue) -> None:
    parted.enqueue_many("jobs:noop", [{"i": i} for i in range(40)])
    lease = PartitionLease(parted.backend, "host:1:lease0002", lease_seconds=60)
    first = lease.current(["default"])
    assert first is not None
    lease._renew_at = 0  # half the lease has gone by: the next current() renews it
    assert lease.current(["default"]) == first
    run_query(parted, "partition_lease_by_hand", {"partition": first, "worker": "other:1:x", "seconds": 60})
    lease._renew_at = 0
    assert lease.current(["default"]) != first  # lost to another: a fresh lease, never a shared one
    lease.release()


def test_a_paused_queue_leases_nothing(parted: Queue) -> None:
    parted.enqueue_many("jobs:noop", [{"i": i} for i in range(10)])
    parted.pause("default")
    assert partition_worker(parted).run().processed == 0
    assert not any(info.held for info in parted.partitions())
    parted.resume("default")
