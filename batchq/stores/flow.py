"""The operations of flow control (batchq.policy.flow): a queue's rate and running limits on its
``batchq_queue`` row, the starts of rate-limited queues (``batchq_queue_start``), and the limited
claim. Statements in ``sql/<dialect>/flow.sql``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

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


# A job over its key's rate whose window lets a start in within this long waits for it in the
# worker rather than going back for a slot: a slot's jobs arriving as the jobs before them leave
# the window (a few milliseconds apart) would otherwise lose their place.
SOON_SECONDS = 0.25
# The key's latest slot and the window's next start, read a moment apart as seconds from now, may
# differ by the clocks' rounding (SQLite's julianday) when they are the same instant.
SLOT_ROUNDING_SECONDS = 0.05


class KeyStart(NamedTuple):
    """What a per-key rate's check did to a job (FlowStore.start_keyed): ``started`` it; or
    ``held`` it back, put back for ``wait`` seconds; or neither: the window lets a start in
    within ``wait`` seconds (SOON_SECONDS at most: check again then), or, with no wait, its
    claim was lost (a sweep took the job back)."""

    started: bool
    wait: float | None = None
    held: bool = False

    @property
    def lost(self) -> bool:
        return not self.started and self.wait is None


def stored_rate(limit: Any, period: Any) -> Rate | None:
    """A job row's per-key rate; None when it has none. A value written by hand that is no
    positive count or period reads as 1 job a second: a limit is never ignored."""
    if limit is None:
        return None
    count, seconds = stored_count(limit), stored_seconds(period)
    return Rate(count if count > 0 else 1, seconds if seconds and seconds > 0 else 1.0)


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

    def start_keyed(self, job: Job, key: str, soon: bool = True) -> KeyStart:
        """A claimed job of a rate key, as it is about to start: one transaction (retried on
        deadlocks) that locks the key's row and forgets its starts older than the period. With
        fewer than ``rate.limit`` left, the job starts now (its processing_at) and that start is
        counted; else it goes back, uncounted, due at the key's next slot (next_slot). The rate
        is the job's own, as enqueued (read by id). ``soon``: a start the window lets in within
        SOON_SECONDS is answered as such, nothing written, for the worker to wait for it."""
        params = {"key": key, "id": job.id, "token": job.claim_token}
        return self.db.retrying(lambda: self._start_keyed_once(params, soon))

    def _start_keyed_once(self, params: dict[str, Any], soon: bool) -> KeyStart:
        db = self.db
        with db.transaction():
            job = db.fetchone("key_rate_of_job", params)
            if job is None:
                return KeyStart(False)
            # a rate written by hand that is no rate reads as 1 a second: never as no limit
            rate = stored_rate(job["rate_limit"], job["rate_period"]) or Rate(1, 1.0)
            params = {**params, "period": rate.period}
            db.execute("key_rate_add", params)
            slot = db.fetchone("key_rate_lock", params)
            db.execute("key_rate_prune", params)
            usage = db.fetchone("key_rate_usage", params)
            started = 0 if usage is None else stored_count(usage["started"])
            if started < rate.limit:
                if db.execute("key_rate_start", params) == 0:
                    return KeyStart(False)
                db.execute("key_rate_record", params)
                return KeyStart(True)
            next_in = max((None if usage is None else stored_seconds(usage["next_in"])) or 0.0, 0.0)
            if soon and next_in <= SOON_SECONDS:
                return KeyStart(False, next_in)
            wait, fill = next_slot(slot, next_in, rate)
            db.execute("key_rate_next_slot", {**params, "after": wait, "fill": fill})
            if db.execute("key_rate_hold", {**params, "wait": wait}) == 0:
                return KeyStart(False)
            return KeyStart(False, wait, held=True)


def next_slot(slot: Row | None, next_in: float, rate: Rate) -> tuple[float, int]:
    """The slot of a job held back (seconds from now) and how many jobs it then has: the key's
    latest slot while it has room and is no sooner than the window lets a start in; the next,
    a period later, once it holds rate.limit jobs; else a new one when the window lets a start
    in. So held jobs come back at most rate.limit at a time, a period apart."""
    slot_in = None if slot is None else stored_seconds(slot["slot_in"])
    fill = 0 if slot is None else stored_count(slot["slot_fill"])
    if slot_in is None or slot_in < next_in - SLOT_ROUNDING_SECONDS:
        return next_in, 1
    if fill >= rate.limit:
        return slot_in + rate.period, 1
    return slot_in, fill + 1


class MySQLFlowStore(FlowStore, dialect="mysql"):
    """MySQL's claim begins and commits a transaction of its own: here the jobs are locked and
    marked with statements that leave the limited claim's transaction open."""

    def _take(self, queue: str, worker: str, token: str, limit: int) -> list[Job]:
        rows = self.db.rows("flow_claim_pick", {"queue": queue, "limit": limit})
        if rows:
            params: dict[str, Any] = {"ids": [row[0] for row in rows], "worker": worker, "token": token}
            self.db.execute("flow_claim_mark", params)
        return [Job.from_row(row, token) for row in rows]
