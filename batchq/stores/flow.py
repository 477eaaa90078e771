"""The operations of flow control (batchq.policy.flow): a queue's rate and running limits on its
``batchq_queue`` row, the starts of rate-limited queues (``batchq_queue_start``), and the limited
claim. Statements in ``sql/<dialect>/flow.sql``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..core.job import Job
from ..core.stored import Row, stored_count, stored_seconds, stored_text, stored_time
from .base import Store


@dataclass(frozen=True)
class Rate:
    """At most ``limit`` starts in any window of ``period`` seconds."""

    limit: int
    period: float

    def __str__(self) -> str:
        return f"{self.limit}/{format_period(self.period)}"


@dataclass(frozen=True)
class QueueLimits:
    """A queue's flow limits as stored (None: no such limit)."""

    rate: Rate | None = None
    max_running: int | None = None

    @property
    def any(self) -> bool:
        return self.rate is not None or self.max_running is not None


def format_period(seconds: float) -> str:
    """A period as the rate was likely written: s, m, h, d for one of them, else e.g. 10s, 90s."""
    for unit, length in (("s", 1.0), ("m", 60.0), ("h", 3600.0), ("d", 86400.0)):
        if seconds == length:
            return unit
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:g}s"


@dataclass(frozen=True)
class Usage:
    """What a queue's limits have in use now, on the database's clock."""

    started: int = 0  # starts in the last period (0 without a rate)
    next_in: float | None = None  # seconds until the oldest of those leaves the window
    next_at: datetime | str | None = None  # when it does (aware UTC)
    running: int = 0  # the queue's jobs being run
    due: bool = False  # a due job waits in the queue

    def room(self, limits: QueueLimits, wanted: int) -> int:
        """How many jobs the limits let start now, up to ``wanted``."""
        room = wanted
        if limits.rate is not None:
            room = min(room, limits.rate.limit - self.started)
        if limits.max_running is not None:
            room = min(room, limits.max_running - self.running)
        return max(room, 0)

    def wait(self, limits: QueueLimits) -> float | None:
        """Seconds until the rate allows a start, when it is what holds (None: a running limit
        holds, and a job's end frees a place at a time nobody knows in advance)."""
        if limits.rate is None or self.started < limits.rate.limit or self.next_in is None:
            return None
        return max(self.next_in, 0.0)

    def holder(self, limits: QueueLimits) -> str | None:
        """Which limit lets no job start now: "rate", "max_running", or None."""
        if limits.rate is not None and self.started >= limits.rate.limit:
            return "rate"
        if limits.max_running is not None and self.running >= limits.max_running:
            return "max_running"
        return None


@dataclass(frozen=True)
class FlowClaim:
    """What a limited claim did: the jobs it claimed, or, when the limits held it back while a
    due job waits, ``held`` and the seconds until a start is allowed (None: unknown)."""

    jobs: list[Job] = field(default_factory=list)
    held: bool = False
    wait: float | None = None


def stored_limits(row: Row | None) -> QueueLimits:
    """A queue's limits as stored; a value written by hand that is no positive whole number
    reads as 0 (nothing starts: a limit is never ignored)."""
    if row is None:
        return QueueLimits()
    rate = None
    if row["rate_limit"] is not None:
        period = stored_seconds(row["rate_period"])
        rate = Rate(stored_count(row["rate_limit"]), period if period and period > 0 else 1.0)
    running = None if row["max_running"] is None else stored_count(row["max_running"])
    return QueueLimits(rate, running)


class FlowStore(Store):
    """Rate and running limits, and the limited claim."""

    def limits(self, queue: str | None = None) -> dict[str, QueueLimits]:
        """The queues with a limit (or ``queue``'s, if it has one), by name."""
        rows = self.db.fetchall("flow_limits", {"queue": queue})
        return {stored_text(row["name"]): stored_limits(row) for row in rows}

    def set_rate(self, queue: str, rate: Rate | None) -> None:
        """Set or lift (None) a queue's rate limit; lifted, its recorded starts go too."""
        params = {
            "queue": queue,
            "rate_limit": None if rate is None else rate.limit,
            "rate_period": None if rate is None else rate.period,
        }
        with self.db.transaction():
            self.db.execute("flow_set_rate", params)
            if rate is None:
                self.db.execute("flow_forget_starts", {"queue": queue})

    def set_max_running(self, queue: str, max_running: int | None) -> None:
        """Set or lift (None) a queue's running limit."""
        self.db.execute("flow_set_max_running", {"queue": queue, "max_running": max_running})

    def usage(self, queue: str, limits: QueueLimits) -> Usage:
        """What the queue's limits have in use now (a plain read: `batchq explain`)."""
        period = None if limits.rate is None else limits.rate.period
        row = self.db.fetchone("flow_usage", {"queue": queue, "period": period})
        if row is None:
            return Usage()
        next_in = None if row["next_in"] is None else float(row["next_in"])
        started, running = int(row["started"] or 0), int(row["running"] or 0)
        return Usage(started, next_in, stored_time(row["next_at"]), running, bool(row["due"]))

    def claim(self, queue: str, worker: str, token: str, limit: int) -> FlowClaim:
        """The limited claim, one transaction (retried on deadlocks): lock the queue's row, read
        its limits and what they have in use, claim at most what they allow, and record the
        starts at the jobs' processing_at."""
        return self.db.retrying(lambda: self._claim_once(queue, worker, token, limit))

    def _claim_once(self, queue: str, worker: str, token: str, limit: int) -> FlowClaim:
        with self.db.transaction():
            limits = stored_limits(self.db.fetchone("flow_lock", {"queue": queue}))
            if limits.rate is not None:
                self.db.execute("flow_prune", {"queue": queue, "period": limits.rate.period})
            usage = self.usage(queue, limits)
            room = usage.room(limits, limit)
            if room == 0:
                return FlowClaim(held=usage.due, wait=usage.wait(limits))
            jobs = self._take(queue, worker, token, room)
            if jobs and limits.rate is not None:
                self.db.execute("flow_record_starts", {"ids": [job.id for job in jobs], "token": token})
            return FlowClaim(jobs)

    def _take(self, queue: str, worker: str, token: str, limit: int) -> list[Job]:
        """Claim up to ``limit`` due jobs of ``queue``, inside the limited claim's transaction:
        the job store's own claim, which joins it."""
        return self.db.stores.jobs.claim(queue, worker, token, limit).jobs


class MySQLFlowStore(FlowStore, dialect="mysql"):
    """MySQL's claim begins and commits a transaction of its own: here the jobs are locked and
    marked with statements that leave the limited claim's transaction open."""

    def _take(self, queue: str, worker: str, token: str, limit: int) -> list[Job]:
        rows = self.db.rows("flow_claim_pick", {"queue": queue, "limit": limit})
        if rows:
            params: dict[str, Any] = {"ids": [row[0] for row in rows], "worker": worker, "token": token}
            self.db.execute("flow_claim_mark", params)
        return [Job.from_row(row, token) for row in rows]
