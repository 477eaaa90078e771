"""The dashboard's charts (issue 28): a per-minute rollup of each queue, kept off the job path.

``sample`` is run by `batchq tick` (cron runs it every minute on every host, alone or as
`run --tick`), never by a worker's claim or finish. Its first statement asks whether this
minute is already sampled (an index probe): one tick per minute does the work, the others stop
there. The one that samples:

- counts the jobs that finished and failed in each minute since the one before the last sample
  (at most ``BACKFILL_MINUTES``): finished ones from job history (only queues that keep history, or
  workers run with ``--keep``: elsewhere a finished job leaves no row to count), failed ones from
  history and from the failed job rows (``last_error_at``), each job once;
- reads each queue's depth (due jobs waiting: ready and blocked) and oldest due age with the
  query `batchq metrics` runs (one GROUP BY over the job table's claim index: what one
  Prometheus scrape costs);
- writes one row per queue and minute (``batchq_chart_minute``), a row for every queue it knows
  (with jobs, configured, or charted within the last hour), 0 where nothing happened;
- deletes rows older than ``RETAIN_MINUTES``, at most ``PRUNE_BATCH`` per tick.

A minute nobody sampled stays without a row: the charts show a gap there. Two ticks that race
in the same minute write the same numbers (the latest wins). ``read`` gives the dashboard the
rows of a range (1h, 24h, 7d) in buckets; rows written by hand read as sanely as they can:
negative counts as none, values that are no number as none, minutes in the future not at all.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..backends import Backend
from ..errors import ConfigError
from ..stores.charts import ChartBucket, MinuteCount, MinuteSample
from .metrics import read_queues

BACKFILL_MINUTES = 60  # after a gap, the minutes counted again from history (older: a gap)
RETAIN_MINUTES = 8 * 24 * 60  # the 7d range, and a day to spare
PRUNE_BATCH = 1000  # rows deleted per tick: a tick writes one row per queue
# name: (minutes shown, minutes per point): each range is drawn with 60 to 168 points.
RANGES: dict[str, tuple[int, int]] = {"1h": (60, 1), "24h": (24 * 60, 15), "7d": (7 * 24 * 60, 60)}
DEFAULT_RANGE = "1h"
TOP_QUEUES = 6  # drawn one line each; the others are summed into one line, "other"
OTHER = "other"


@dataclass(frozen=True)
class Sampled:
    """What one ``sample`` did."""

    minute: int  # the minute of the sample (Unix time / 60, on the database's clock)
    queues: int  # queues written
    counted: int  # minutes whose finished and failed jobs were counted
    pruned: int  # rows deleted past the retention
    skipped: bool = False  # this minute was sampled already (by another tick): nothing done


def sample(backend: Backend, at: int | None = None) -> Sampled:
    """Count the minutes since the last sample, sample this one, prune (module docstring).
    ``at``: the minute to sample as (tests); by default the database's minute now."""
    store = backend.stores.charts
    clock = store.clock()
    now = clock.now if at is None else at
    last = clock.sampled if at is None else store.last_sample(at)
    if last is not None and last >= now:
        return Sampled(now, 0, 0, 0, skipped=True)
    # From the minute before the last sample: a job that finished in it may have committed
    # after that sample counted it.
    first = now - BACKFILL_MINUTES if last is None else max(last - 1, now - BACKFILL_MINUTES)
    counts = store.counts(first, now - 1)
    snapshot = read_queues(backend)
    recent = store.queues_since(now - 60)
    names = sorted({q.queue for q in snapshot} | {name for name, _ in counts} | recent)
    count_rows = [
        MinuteCount(name, minute, done, failed)
        for name in names
        for minute in range(first, now)
        for done, failed in [counts.get((name, minute), (0, 0))]
    ]
    sample_rows = [MinuteSample(q.queue, now, q.ready + q.blocked, q.oldest_due_seconds) for q in snapshot]
    sampled = {q.queue for q in snapshot}
    sample_rows += [MinuteSample(n, now, 0, 0.0) for n in names if n not in sampled]
    store.write(count_rows, sample_rows)  # one statement a row: upserts (a queue or two dozen a minute)
    pruned = store.prune(now - RETAIN_MINUTES, PRUNE_BATCH)
    return Sampled(now, len(names), now - first, pruned)


@dataclass
class Series:
    """One line of each chart: a queue (or "other"), a value per point; None: a gap."""

    name: str
    finished: list[float | None]  # jobs per minute, averaged over the point's counted minutes
    failed: list[float | None]
    depth: list[float | None]  # the largest sampled within the point
    oldest: list[float | None]  # seconds, the largest sampled within the point
    queues: int = 1  # how many queues the line sums ("other": several)
    totals: dict[str, float] = field(default_factory=dict)


@dataclass
class Charts:
    range: str
    step: int  # minutes per point
    first_minute: int  # the first point's first minute
    now: int
    series: list[Series]  # the top queues by activity, then "other" if any

    @property
    def points(self) -> int:
        return RANGES[self.range][0] // self.step


def check_range(name: str | None) -> str:
    """The range a link asks for; ConfigError (a 400 on the dashboard) for any other."""
    if name is None or name == "":
        return DEFAULT_RANGE
    if name not in RANGES:
        raise ConfigError(f"bad range {name[:40]!r}: use one of {', '.join(RANGES)}")
    return name


def read(
    backend: Backend, range_name: str = DEFAULT_RANGE, top: int = TOP_QUEUES, at: int | None = None
) -> Charts:
    """The range's points per queue, the ``top`` busiest queues apart and the others summed,
    up to the minute ``at`` (by default the database's minute now)."""
    minutes, step = RANGES[check_range(range_name)]
    store = backend.stores.charts
    now = store.clock().now if at is None else at
    points = minutes // step
    first_bucket = now // step - points + 1
    grid = _Grid(points, step)
    for bucket in store.buckets(first_bucket * step, now, step):
        grid.add(bucket, bucket.bucket - first_bucket)
    return Charts(range_name, step, first_bucket * step, now, grid.series(top))


class _Grid:
    """The rollup's buckets laid out per queue and point, with which points were sampled."""

    def __init__(self, points: int, step: int) -> None:
        self.points, self.step = points, step
        self.rows: dict[str, dict[int, ChartBucket]] = defaultdict(dict)
        self.counted = [0] * points  # the most minutes any queue had counted, per point
        self.sampled = [False] * points

    def add(self, row: ChartBucket, point: int) -> None:
        if not 0 <= point < self.points:
            return  # a bucket outside the range (a minute written by hand as a fraction or text)
        self.rows[row.queue][point] = row
        self.counted[point] = max(self.counted[point], min(row.counted, self.step))
        self.sampled[point] |= row.depth is not None

    def series(self, top: int) -> list[Series]:
        lines = sorted((self._line(name) for name in self.rows), key=_activity)
        kept, rest = lines[:top], lines[top:]
        if rest:
            kept.append(self._other(rest))
        return kept

    def _line(self, name: str) -> Series:
        rows = self.rows[name]
        line = Series(
            name,
            [self._rate(rows.get(p), "finished", p) for p in range(self.points)],
            [self._rate(rows.get(p), "failed", p) for p in range(self.points)],
            [self._level(rows.get(p), "depth", p) for p in range(self.points)],
            [self._level(rows.get(p), "oldest", p) for p in range(self.points)],
        )
        _total(line, rows.values())
        return line

    def _rate(self, row: ChartBucket | None, column: str, point: int) -> float | None:
        if not self.counted[point]:
            return None
        summed = getattr(row, column) if row is not None else 0.0
        return (summed or 0.0) / self.counted[point]

    def _level(self, row: ChartBucket | None, column: str, point: int) -> float | None:
        if not self.sampled[point]:
            return None
        return (getattr(row, column) if row is not None else None) or 0.0

    def _other(self, lines: list[Series]) -> Series:
        other = Series(
            f"{OTHER} ({len(lines)} queues)",
            _combine([s.finished for s in lines], sum),
            _combine([s.failed for s in lines], sum),
            _combine([s.depth for s in lines], sum),
            _combine([s.oldest for s in lines], max),
            queues=len(lines),
        )
        other.totals = {key: sum(s.totals.get(key, 0.0) for s in lines) for key in ("finished", "failed")}
        other.totals["depth"] = max(s.totals.get("depth", 0.0) for s in lines)
        other.totals["oldest"] = max(s.totals.get("oldest", 0.0) for s in lines)
        return other


def _combine(values: list[list[float | None]], how: Callable[[list[float]], float]) -> list[float | None]:
    """Per point, ``how`` of the lines' values there; None where every line has a gap."""
    combined: list[float | None] = []
    for point in zip(*values, strict=True):
        known = [v for v in point if v is not None]
        combined.append(how(known) if known else None)
    return combined


def _total(line: Series, rows: Iterable[ChartBucket]) -> None:
    """The line's figures over the range: jobs finished and failed, the largest depth and age."""
    finished = failed = depth = oldest = 0.0
    for row in rows:
        finished += row.finished or 0.0
        failed += row.failed or 0.0
        depth = max(depth, row.depth or 0.0)
        oldest = max(oldest, row.oldest or 0.0)
    line.totals = {"finished": finished, "failed": failed, "depth": depth, "oldest": oldest}


def _activity(line: Series) -> tuple[float, str]:
    """Busiest first (jobs finished and failed, and the deepest backlog); ties by name."""
    t = line.totals
    score = t["finished"] + t["failed"] + t["depth"]
    return (-score if math.isfinite(score) else -math.inf, line.name)
