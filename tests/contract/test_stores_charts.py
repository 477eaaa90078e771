"""The chart store's contract (batchq.stores.charts): each method called directly, on every
dialect. What batchq.ops.charts builds on it (one sample a minute, backfill, top queues and
"other") is tested in test_charts.py; here the rollup's operations alone."""

from __future__ import annotations

import pytest

from batchq import Queue
from batchq.runtime.worker import RunOptions, Worker
from batchq.stores.charts import ChartBucket, ChartClock, ChartStore, MinuteCount, MinuteSample
from tests.contract.test_charts import write


def store(queue: Queue) -> ChartStore:
    return queue.backend.stores.charts


def test_each_dialect_gets_the_store(queue: Queue) -> None:
    assert type(store(queue)) is ChartStore
    assert store(queue) is store(queue)  # made once per connection


def test_the_clock_is_the_databases_minute_and_the_latest_sample_up_to_it(queue: Queue) -> None:
    charts = store(queue)
    clock = charts.clock()
    assert isinstance(clock, ChartClock) and clock.sampled is None
    assert clock.now > 29_000_000  # minutes since 1970: past 2025
    now = clock.now
    charts.write([], [MinuteSample("q", now - 5, 3, 1.5)])
    charts.write([MinuteCount("q", now - 2, 1, 0)], [])  # counted, not sampled: no sample
    charts.write([], [MinuteSample("q", now + 10, 1, 0.0)])  # a future minute: not taken
    assert charts.clock().sampled == now - 5
    assert charts.clock().now in (now, now + 1)
    assert charts.last_sample(now - 6) is None
    assert charts.last_sample(now) == now - 5
    assert charts.last_sample(now + 10) == now + 10


def test_write_upserts_and_buckets_sum_the_counts_and_take_the_largest_sample(queue: Queue) -> None:
    charts = store(queue)
    m = charts.clock().now - 10
    charts.write(
        [MinuteCount("a", m, 4, 1), MinuteCount("a", m + 1, 2, 0), MinuteCount("b", m, 0, 0)],
        [MinuteSample("a", m, 7, 30.0), MinuteSample("a", m + 1, 9, 12.5)],
    )
    charts.write([MinuteCount("a", m, 5, 2)], [MinuteSample("a", m, 8, 31.0)])  # again: the latest wins
    by_minute = {(b.queue, b.bucket): b for b in charts.buckets(m, m + 1, 1)}
    assert by_minute[("a", m)] == ChartBucket("a", m, 1, 5.0, 2.0, 8.0, 31.0)
    assert by_minute[("a", m + 1)] == ChartBucket("a", m + 1, 1, 2.0, 0.0, 9.0, 12.5)
    assert by_minute[("b", m)] == ChartBucket("b", m, 1, 0.0, 0.0, None, None)  # counted, not sampled
    assert charts.buckets(m + 2, m + 5, 1) == []
    step = 1_000_000  # one bucket holds both minutes
    (a,) = [b for b in charts.buckets(m, m + 1, step) if b.queue == "a"]
    assert (a.bucket, a.counted, a.finished, a.failed, a.depth, a.oldest) == (
        m // step,
        2,
        7.0,
        2.0,
        9.0,
        31.0,
    )


def test_buckets_read_rows_written_by_hand_as_no_less_than_zero(queue: Queue) -> None:
    charts = store(queue)
    m = charts.clock().now - 3
    write(queue, "odd", m, -4, -1, -2, -9.5)
    write(queue, "odd", m + 1, None, None, None, None)
    first, second = sorted(charts.buckets(m, m + 1, 1), key=lambda b: b.bucket)
    assert (first.finished, first.failed, first.depth, first.oldest, first.counted) == (0.0, 0.0, 0.0, 0.0, 1)
    assert (second.counted, second.depth, second.oldest) == (0, None, None)


def test_counts_finished_from_history_and_failed_from_history_and_failed_rows(queue: Queue) -> None:
    charts = store(queue)
    queue.configure("kept", keep_for=3600)
    queue.enqueue("jobs:noop", 1, queue="kept")
    queue.enqueue("jobs:noop", 2, queue="kept")
    queue.enqueue("jobs:fail", "x", queue="kept", max_errors=1)  # in history: counted there once
    queue.enqueue("jobs:fail", "y", queue="plain", max_errors=1)  # a failed row, no history
    queue.enqueue("jobs:noop", queue="plain")  # finished, not kept: nothing counts it
    before = charts.clock().now
    Worker(queue, RunOptions(backoff_base=0, queues=("kept", "plain"))).run()
    after = charts.clock().now
    counts = charts.counts(before - 1, after)
    per_queue: dict[str, list[int]] = {}
    for (name, minute), (done, failed) in counts.items():
        assert before <= minute <= after
        totals = per_queue.setdefault(name, [0, 0])
        totals[0] += done
        totals[1] += failed
    assert per_queue == {"kept": [2, 1], "plain": [0, 1]}
    assert charts.counts(before - 10, before - 2) == {}
    assert charts.counts(after, after - 1) == {}  # an empty range


def test_queues_since_lists_the_queues_charted_from_a_minute(queue: Queue) -> None:
    charts = store(queue)
    now = charts.clock().now
    assert charts.queues_since(now - 60) == set()
    charts.write([MinuteCount("old", now - 70, 1, 0)], [MinuteSample("new", now - 10, 0, 0.0)])
    charts.write([MinuteCount("new", now - 9, 0, 0)], [])
    assert charts.queues_since(now - 60) == {"new"}
    assert charts.queues_since(now - 70) == {"old", "new"}


@pytest.mark.parametrize("limit", [2, 10])
def test_prune_deletes_up_to_a_limit_of_the_oldest_minutes(queue: Queue, limit: int) -> None:
    charts = store(queue)
    now = charts.clock().now
    charts.write([MinuteCount("q", minute, 1, 0) for minute in range(1, 6)], [MinuteSample("q", now, 1, 0.0)])
    pruned = [charts.prune(now - 1, limit) for _ in range(4)]
    assert sum(pruned) == 5 and pruned[0] == min(limit, 5)
    assert pruned[-1] == 0
    (left,) = charts.buckets(0, now, 1)
    assert left.bucket == now and left.depth == 1.0
