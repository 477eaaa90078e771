"""The dashboard charts' rollup (batchq.ops.charts): rows of ``batchq_chart_minute``, one per queue
and minute, written by `batchq tick` and read in buckets. Statements in
``sql/<dialect>/charts.sql``; a minute is Unix time / 60 on the database's clock.

Rows written by hand read as sanely as they can: a count or figure that is no number, or is
negative, reads as none (None), never as a crash.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.stored import Row, stored_count, stored_seconds, stored_text
from .base import Store


@dataclass(frozen=True)
class ChartClock:
    """The database's minute now, and the latest minute sampled up to it (None: never)."""

    now: int
    sampled: int | None


@dataclass(frozen=True)
class MinuteCount:
    """A queue's jobs finished and failed in one minute."""

    queue: str
    minute: int
    finished: int
    failed: int


@dataclass(frozen=True)
class MinuteSample:
    """A queue's depth (due jobs waiting) and oldest due age, sampled at one minute."""

    queue: str
    minute: int
    depth: int
    oldest: float  # seconds


@dataclass(frozen=True)
class ChartBucket:
    """A queue's minutes within one bucket of ``step`` minutes, as chart_read sums them."""

    queue: str
    bucket: int  # the minute / step
    counted: int  # minutes whose finished and failed jobs were counted
    finished: float | None  # summed; None: no number (rows written by hand)
    failed: float | None
    depth: float | None  # the largest sampled; None: none sampled
    oldest: float | None  # seconds, the largest sampled


class ChartStore(Store):
    """The per-minute rollup of each queue."""

    def clock(self) -> ChartClock:
        """The minute now and the latest sampled up to it (a future minute written by hand is
        not taken for a sample)."""
        row = self.db.fetchone("chart_now") or {}
        sampled = row.get("sampled")
        return ChartClock(stored_count(row.get("now")), None if sampled is None else stored_count(sampled))

    def last_sample(self, up_to: int) -> int | None:
        """The latest minute sampled up to minute ``up_to``; None: never."""
        row = self.db.fetchone("chart_last_sample", {"at": up_to}) or {}
        return None if row.get("sampled") is None else stored_count(row["sampled"])

    def counts(self, first: int, last: int) -> dict[tuple[str, int], tuple[int, int]]:
        """(queue, minute): (finished, failed) for minutes ``first`` to ``last``, where not both
        0: finished ones from job history, failed ones from history and from the failed job rows
        (``last_error_at``), each job once."""
        counts: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
        if last < first:
            return {}
        span = {"first": first, "last": last}
        for row in self.db.fetchall("chart_finished", span):
            slot = 0 if stored_text(row["outcome"]) == "succeeded" else 1
            counts[_minute_of(row)][slot] += stored_count(row["jobs"])
        for row in self.db.fetchall("chart_failed_jobs", span):
            counts[_minute_of(row)][1] += stored_count(row["jobs"])
        return {key: (done, failed) for key, (done, failed) in counts.items()}

    def queues_since(self, minute: int) -> set[str]:
        """The queues charted since ``minute`` (the writer keeps writing a drained queue's zeros)."""
        return {stored_text(row["queue"]) for row in self.db.fetchall("chart_queues", {"since": minute})}

    def write(self, counts: Sequence[MinuteCount], samples: Sequence[MinuteSample]) -> None:
        """Write the counts and samples in one transaction, each an upsert of its (queue,
        minute) row (written again: the latest wins), one statement a row."""
        with self.db.transaction():
            for count in counts:
                params = {"queue": count.queue, "minute": count.minute}
                self.db.execute("chart_count", {**params, "finished": count.finished, "failed": count.failed})
            for taken in samples:
                params = {"queue": taken.queue, "minute": taken.minute}
                self.db.execute("chart_sample", {**params, "depth": taken.depth, "oldest": taken.oldest})

    def prune(self, before: int, limit: int) -> int:
        """Delete up to ``limit`` rows of minutes before ``before``, oldest first; how many."""
        return self.db.execute("chart_prune", {"before": before, "limit": limit})

    def buckets(self, since: int, until: int, step: int) -> list[ChartBucket]:
        """Minutes ``since`` to ``until`` per queue and bucket of ``step`` minutes."""
        params = {"since": since, "until": until, "step": step}
        return [_bucket(row) for row in self.db.fetchall("chart_read", params)]


def _minute_of(row: Row) -> tuple[str, int]:
    return stored_text(row["queue"]), stored_count(row["minute"])


def _bucket(row: Row) -> ChartBucket:
    return ChartBucket(
        queue=stored_text(row["queue"]),
        bucket=stored_count(row["bucket"]),
        counted=stored_count(row["counted"]),
        finished=_figure(row["finished"]),
        failed=_figure(row["failed"]),
        depth=_figure(row["depth"]),
        oldest=_figure(row["oldest"]),
    )


def _figure(value: object) -> float | None:
    """A stored figure as a number of at least 0; None if it is none (NULL, text, NaN)."""
    number = stored_seconds(value)
    return None if number is None else max(number, 0.0)
