"""The dashboard charts' per-minute rollup (batchq.ops.charts, issue 28) on every backend: what a
sample counts and reads, that one sample a minute does the work, gaps, pruning, and rows
written by hand with odd values (NULLs, negative counts, future minutes, hostile names), which
must read as sanely as they can and never fail the reader or the writer."""

from __future__ import annotations

from typing import Any

from batchq import Queue
from batchq.ops.charts import BACKFILL_MINUTES, OTHER, RETAIN_MINUTES, read, sample
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import sql


def minute_now(queue: Queue) -> int:
    row = queue.backend.fetchone("chart_now")
    assert row is not None
    return int(row["now"])


def write(queue: Queue, name: str, minute: Any, finished: Any, failed: Any, depth: Any, oldest: Any) -> None:
    """A rollup row by plain SQL, as anyone with write access to the table could write it."""
    mark = "?" if queue.backend.dialect == "sqlite" else "%s"
    sql(
        queue,
        "INSERT INTO batchq_chart_minute (queue, minute, finished, failed, depth, oldest_age_seconds) "
        f"VALUES ({', '.join([mark] * 6)})",
        (name, minute, finished, failed, depth, oldest),
    )


def rows(queue: Queue) -> list[tuple[Any, ...]]:
    return sql(
        queue,
        "SELECT queue, minute, finished, failed, depth FROM batchq_chart_minute ORDER BY minute, queue",
    )


def test_a_sample_counts_what_finished_and_failed_and_reads_the_depth(queue: Queue) -> None:
    queue.configure("kept", keep_for=3600)
    for n in range(3):
        queue.enqueue("jobs:noop", n, queue="kept")
    queue.enqueue("jobs:fail", "x", queue="kept", max_errors=1)
    queue.enqueue("jobs:fail", "y", queue="plain", max_errors=1)
    queue.enqueue("jobs:noop", queue="plain")  # finished, not kept: nothing to count it by
    before = minute_now(queue)
    Worker(queue, RunOptions(backoff_base=0, queues=("kept", "plain"))).run()
    after = minute_now(queue)
    queue.enqueue_many("jobs:noop", [1, 2], queue="waiting")
    queue.enqueue("jobs:noop", queue="waiting", delay=3600)  # not due: not in the depth
    done = sample(queue.backend, at=after + 1)
    assert not done.skipped and done.minute == after + 1 and done.queues == 3
    charts = read(queue.backend, "1h", at=after + 1)
    lines = {s.name: s for s in charts.series}
    assert lines["kept"].totals["finished"] == 3 and lines["kept"].totals["failed"] == 1
    assert lines["plain"].totals["finished"] == 0 and lines["plain"].totals["failed"] == 1
    assert lines["waiting"].depth[-1] == 2 and lines["kept"].depth[-1] == 0
    worked = [charts.points - 2 - (after - m) for m in range(before, after + 1)]
    assert sum(lines["kept"].finished[p] or 0 for p in worked) == 3  # per minute: one point each
    assert lines["kept"].finished[0] == 0  # counted (a full hour back), nothing finished then


def test_one_sample_a_minute_does_the_work(queue: Queue) -> None:
    queue.enqueue("jobs:noop", queue="a")
    now = minute_now(queue)
    assert not sample(queue.backend, at=now).skipped
    written = rows(queue)
    again = sample(queue.backend, at=now)
    assert again.skipped and rows(queue) == written
    later = sample(queue.backend, at=now + 3)
    assert later.counted == 4  # since the minute before the last sample (a late commit's)
    assert [r[1] for r in rows(queue)][-4:] == [now, now + 1, now + 2, now + 3]


def test_a_gap_stays_a_gap_beyond_the_backfill(queue: Queue) -> None:
    queue.enqueue("jobs:noop", queue="a")
    now = minute_now(queue)
    sample(queue.backend, at=now - 200)
    assert sample(queue.backend, at=now).counted == BACKFILL_MINUTES
    [line] = read(queue.backend, "24h", at=now).series
    assert line.depth[-1] == 1
    assert None in line.finished and line.finished[-2] == 0  # the hours nobody sampled: a gap
    first = read(queue.backend, "1h", at=now).series[0]
    assert first.depth[:-1] == [None] * 59  # sampled now only; counted the whole hour before
    assert first.finished[:-1] == [0] * 59 and first.finished[-1] is None


def test_old_minutes_are_pruned_a_batch_a_tick(queue: Queue) -> None:
    now = minute_now(queue)
    for n in range(5):
        write(queue, "old", now - RETAIN_MINUTES - n - 1, 1, 0, 1, 1.0)
    write(queue, "kept", now - RETAIN_MINUTES + 10, 1, 0, 1, 1.0)
    assert sample(queue.backend, at=now).pruned == 5
    assert {r[0] for r in rows(queue)} == {"kept"}


def test_many_queues_are_the_busiest_and_other(queue: Queue) -> None:
    now = minute_now(queue)
    for n in range(10):
        write(queue, f"q{n}", now - 1, n * 10, 0, n, float(n))
    charts = read(queue.backend, "1h", at=now)
    names = [s.name for s in charts.series]
    assert names[:6] == [f"q{n}" for n in (9, 8, 7, 6, 5, 4)]
    assert names[6] == f"{OTHER} (4 queues)" and charts.series[6].queues == 4
    assert charts.series[6].finished[-2] == 0 + 10 + 20 + 30
    assert charts.series[6].oldest[-2] == 3.0


def test_rows_written_by_hand_read_sanely(queue: Queue) -> None:
    now = minute_now(queue)
    hostile = "<script>alert(1)</script>"
    long_name = "x" * (64 if queue.backend.dialect == "mysql" else 200)  # MySQL: VARCHAR(64)
    write(queue, hostile, now - 1, None, None, None, None)
    write(queue, "négatif ☃", now - 2, -5, -1, -3, -2.0)
    write(queue, long_name, now - 3, 7, 2, 4, 9.5)
    write(queue, "future", now + 500, 1, 1, 1, 1.0)
    write(queue, "huge", now - 4, 2**31 - 1, 2**31 - 1, 2**62, 1e300)
    write(queue, "huge", now - 5, 2**31 - 1, 2**31 - 1, 2**62, 1e300)
    charts = read(queue.backend, "1h", at=now)
    lines = {s.name: s for s in charts.series}
    assert "future" not in lines
    assert lines["négatif ☃"].finished[-3] == 0 and lines["négatif ☃"].depth[-3] == 0
    assert lines[hostile].finished[-2] is None  # a minute nobody counted: a gap
    assert lines[long_name].finished[-4] == 7 and lines[long_name].oldest[-4] == 9.5
    assert lines["huge"].totals["finished"] == 2 * (2**31 - 1)
    for range_name in ("24h", "7d"):
        assert read(queue.backend, range_name, at=now).series
    # A future row is no sample of this minute; the writer still samples and counts.
    assert not sample(queue.backend, at=now).skipped


def test_text_and_fractions_in_sqlite_columns_read_as_no_number(queue: Queue) -> None:
    if queue.backend.dialect != "sqlite":
        return  # the servers' typed columns refuse such rows
    now = minute_now(queue)
    write(queue, "text", now - 1, "lots", "x", "deep", "old")
    write(queue, "text", "soon", 1, 1, 1, 1.0)
    write(queue, "fraction", now - 1.5, 1.5, 0, 2.5, float("inf"))
    lines = {s.name: s for s in read(queue.backend, "1h", at=now).series}
    assert lines["text"].depth[-2] is None and lines["fraction"].oldest[-3] in (0.0, None)
    assert not sample(queue.backend, at=now).skipped
