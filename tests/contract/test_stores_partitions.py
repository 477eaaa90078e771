"""The partition store's contract (batchq.stores.partitions): each method called directly, on
every dialect. Partitioned claims as workers use them are tested in test_partitions.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from batchq import Queue
from batchq.stores.partitions import Leased, MySQLPartitionStore, PartitionInfo, PartitionStore
from tests.support.db import run_query

WORKER, OTHER = "host:1:w1", "host:2:w2"


@pytest.fixture
def parts(queue: Queue) -> Iterator[PartitionStore]:
    """The store, with two partitions and their index; switched off again afterwards (the index
    outlives the test's tables)."""
    store = queue.backend.stores.partitions
    store.create_index()
    store.resize(2)
    yield store
    store.resize(0)
    if store.index_exists():
        store.drop_index()


def job_in(queue: Queue, partition: int, name: str = "default") -> int:
    job = int(queue.enqueue("jobs:noop", queue=name))
    run_query(queue, "job_set_partition", {"id": job, "partition": partition})
    return job


def test_each_dialect_gets_its_variant(queue: Queue) -> None:
    expected = MySQLPartitionStore if queue.backend.dialect == "mysql" else PartitionStore
    assert type(queue.backend.stores.partitions) is expected


def test_nothing_set_up_at_first(queue: Queue) -> None:
    store = queue.backend.stores.partitions
    assert store.count() == 0
    assert store.all() == []
    assert store.index_exists() is False


def test_resize_and_the_index(parts: PartitionStore) -> None:
    assert parts.index_exists() is True
    assert parts.count() == 2
    assert parts.all() == [PartitionInfo(n, False, None, None, None) for n in (0, 1)]
    parts.resize(3)
    assert [info.partition for info in parts.all()] == [0, 1, 2]
    parts.resize(1)
    assert parts.count() == 1
    parts.resize(0)
    parts.drop_index()
    assert (parts.count(), parts.index_exists()) == (0, False)


def test_lease_the_free_partition_that_holds_work(queue: Queue, parts: PartitionStore) -> None:
    assert parts.lease(WORKER, ["default"], 30) is None  # no due job anywhere
    assert parts.jobs_due(["default"]) is False
    job_in(queue, 1)
    assert parts.jobs_due(["default"]) is True
    assert parts.jobs_due(["elsewhere"]) is False
    assert parts.lease(WORKER, ["elsewhere"], 30) is None
    assert parts.lease(WORKER, ["default"], 30) == 1
    assert parts.lease(OTHER, ["default"], 30) is None  # partition 1 is leased, 0 has no work
    (held,) = [info for info in parts.all() if info.held]
    assert (held.partition, held.holder, held.last_holder) == (1, WORKER, WORKER)
    assert held.expires_in is not None and 0 < held.expires_in <= 30


def test_renew_and_release_a_lease(queue: Queue, parts: PartitionStore) -> None:
    job_in(queue, 0)
    assert parts.lease(WORKER, ["default"], 30) == 0
    assert parts.renew(0, WORKER, 60) is True
    assert parts.renew(0, OTHER, 60) is False
    assert parts.leased_by_others(OTHER) == [Leased(0, WORKER)]
    assert parts.leased_by_others(WORKER) == []
    assert parts.release(0, OTHER) == 0
    assert parts.release(0, WORKER) == 1
    assert not any(info.held for info in parts.all())
    assert parts.lease(OTHER, ["default"], 30) == 0  # free again


def test_repartition_moves_jobs_out_of_partitions_that_are_gone(queue: Queue, parts: PartitionStore) -> None:
    stray = job_in(queue, 7)
    assert parts.repartition(["elsewhere"], 2) == 0
    assert parts.repartition(["default"], 2) == 1
    assert parts.repartition(["default"], 2) == 0
    assert parts.lease(WORKER, ["default"], 30) in (0, 1)
    assert stray
