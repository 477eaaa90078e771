"""The worker store's contract (batchq.stores.workers): each method called directly, on every
dialect. The registry as workers and `batchq stop` use it is tested in test_registry.py."""

from __future__ import annotations

from batchq import Queue
from batchq.stores.workers import WorkerInfo, WorkerRow, WorkerStore

ROW = WorkerRow("web-1:100:aa", "web-1", 100, "run", ["mail", "reports"], 0.0)


def store(queue: Queue) -> WorkerStore:
    return queue.backend.stores.workers


def test_register_and_list(queue: Queue) -> None:
    workers = store(queue)
    assert workers.all() == []
    workers.register(ROW)
    workers.register(ROW)  # again, as after a reconnect: still one row
    (info,) = workers.all()
    assert isinstance(info, WorkerInfo)
    assert (info.name, info.host, info.pid, info.kind, info.serves) == (
        ROW.name,
        "web-1",
        100,
        "run",
        ["mail", "reports"],
    )
    assert info.state in ("running", "gone", "unknown") and not info.stop_requested
    assert (info.jobs_done, info.jobs_failed, info.job_id, info.jobs_held) == (0, 0, None, 0)


def test_seen_refreshes_the_counts_until_asked_to_stop(queue: Queue) -> None:
    workers = store(queue)
    workers.register(ROW)
    assert workers.seen(ROW.name, 3, 1) is True
    (info,) = workers.all()
    assert (info.jobs_done, info.jobs_failed) == (3, 1)
    assert workers.stop_asked(ROW.name) is False
    assert workers.stop(ROW.name) == 1
    assert workers.seen(ROW.name, 4, 1) is False
    assert workers.stop_asked(ROW.name) is True
    assert workers.all()[0].stop_requested


def test_matching_filters_by_host_queue_and_name(queue: Queue) -> None:
    workers = store(queue)
    workers.register(ROW)
    workers.register(WorkerRow("web-2:7:bb", "web-2", 7, "consume", ["events"], None))
    assert sorted(workers.matching(None, None, None)) == [ROW.name, "web-2:7:bb"]
    assert workers.matching("web-1", None, None) == [ROW.name]
    assert workers.matching(None, "reports", None) == [ROW.name]
    assert workers.matching(None, "mai", None) == []  # a queue is matched whole
    assert workers.matching(None, None, "web-2:7:bb") == ["web-2:7:bb"]
    assert workers.matching("web-1", "events", None) == []


def test_heartbeat_and_unregister(queue: Queue) -> None:
    workers = store(queue)
    workers.register(ROW)
    workers.register(WorkerRow("web-2:7:bb", "web-2", 7, "run", ["mail"], 30.0))
    assert workers.heartbeat(ROW.name) == 0.0
    assert workers.heartbeat("web-2:7:bb") == 30.0
    assert workers.unregister(ROW.name) == 1
    assert workers.unregister(ROW.name) == 0
    assert workers.heartbeat(ROW.name) is None
    assert workers.stop_asked(ROW.name) is None
    assert workers.stop(ROW.name) == 0
