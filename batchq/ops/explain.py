"""Why a job is or is not running, in plain words (`batchq explain ID`, ``Queue.explain``).

It only reads: plain SELECTs in autocommit (through batchq.stores.inspection), no
FOR UPDATE, no BEGIN IMMEDIATE, and the worker's liveness is asked the way gc-processing asks it
(IS_USED_LOCK, pg_locks, a pid), never by taking the lock. So a worker never waits on it.
Times and ages are the database server's. A row written by hand, whatever it holds, is
explained as far as it can be read, never a crash.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..backends import Backend
from ..core.config import counted, format_duration, format_time
from ..core.failures import EXPIRED_REASON
from ..core.job import JOB_ID_RANGE
from ..core.stored import (
    PROGRESS_MESSAGE_MAX_CHARS,
    Row,
    clean_message,
    stored_fraction,
    stored_seconds,
    stored_text,
    stored_time,
)
from ..errors import ConfigError
from ..jobs.dependencies import waiting_for
from ..stores.flow import stored_rate
from ..stores.inspection import KeyHolder

# The statuses in which a job holds its unique key (the partial index batchq_job_unique).
UNIQUE_KEY_HELD_IN = ("ready", "scheduled", "blocked", "processing")


@dataclass(frozen=True)
class Explanation:
    """Why job ``id`` is or is not running, on the database server's clock.

    ``state``: waiting (due, not yet claimed), blocked (due, waiting for a slot of its
    concurrency key), delayed (not due yet; ``delay_reason`` says why: "version" when a worker
    that knows only an older version of its task put it back), running (claimed),
    failed (out of tries, or expired: not started by ``expires_at``), unrunnable (a status no
    worker claims: a row written by hand) or
    unknown (no such row: finished, cancelled, purged, or never there). ``summary`` and
    ``details`` say it in plain words; the other fields are what they are drawn from.
    """

    id: int
    state: str
    summary: str
    details: tuple[str, ...] = ()
    queue: str | None = None
    task: str | None = None
    status: str | None = None  # the row's status column, as stored
    priority: int | None = None  # None: not a whole number (a row written by hand)
    error_count: int | None = None
    max_errors: int | None = None
    last_error: str | None = None
    created_at: datetime | str | None = None  # aware UTC; a value that is not a time, as stored
    run_at: datetime | str | None = None
    due_in_seconds: float | None = None  # negative: due that long ago
    # delayed: "delay" (at enqueue), "backoff" (after a failure), "version", "parents" (after=),
    # "snooze" (its task raised batchq.Snooze), "rate" (its rate key's rate held it back)
    delay_reason: str | None = None
    delay_seconds: float | None = None  # run_at - created_at: the delay asked at enqueue
    jobs_ahead: int | None = None  # waiting: due jobs of its queue a claim takes first
    queue_paused: bool = False
    worker: str | None = None  # running: locked_by
    processing_at: datetime | str | None = None
    running_seconds: float | None = None
    worker_alive: bool | None = None  # running: None when it cannot be told from here
    concurrency_key: str | None = None
    concurrency_limit: int | None = None
    key_active: int | None = None  # jobs of its concurrency key that are ready or running
    key_holders: tuple[int, ...] = ()  # blocked: some of those jobs (the oldest five)
    unique_key: str | None = None
    task_version: int | None = None  # the task's version at enqueue (None: unreadable)
    version_wait: str | None = None  # "worker host:pid knows version 2": it put the job back
    backoff_seconds: float | None = None  # given to enqueue; None: the task's, else the run's
    waiting_for: tuple[int, ...] = ()  # delayed for "parents": some of the jobs it waits for
    expires_at: datetime | str | None = None  # enqueue(expires=...): never started after; None: never
    # What its task last reported with batchq.progress() (batchq.jobs.reporting), kept after a failed
    # try: a fraction from 0 to 1 and a message (None: none, or unreadable: see notes), when it
    # was written and how long ago (server clock), and whether the try running now wrote it
    # (False: an earlier try's; None: not running, or not known).
    progress: float | None = None
    progress_message: str | None = None
    progress_at: datetime | str | None = None
    progress_age_seconds: float | None = None
    progress_this_try: bool | None = None
    snoozes: int | None = None  # times its task raised batchq.Snooze (not counted as tries)
    rate_key: str | None = None  # enqueue(rate_key=...): its key's rate holds it back when reached
    key_rate: str | None = None  # that rate, "5/s"
    # waiting, held back by its queue's flow limits (batchq.policy.flow): "rate" or "max_running"
    held_by: str | None = None
    next_start_at: datetime | str | None = None  # held by the rate: when a start is allowed again
    notes: tuple[str, ...] = field(default=())  # what could not be read (a row written by hand)

    @property
    def exists(self) -> bool:
        return self.state != "unknown"


def explain(backend: Backend, job_id: int) -> Explanation:
    """Explain job ``job_id``; an id no job has gives state 'unknown' (ConfigError if not an int)."""
    if isinstance(job_id, bool) or not isinstance(job_id, int):
        raise ConfigError(f"bad job id {job_id!r}: use a whole number")
    row = backend.stores.inspection.job(job_id) if _possible(job_id) else None
    if row is None:
        return _unknown(job_id)
    facts = _Facts(row)
    explanation = _by_state(backend, facts)
    more = [line for line in (_progress_line(facts), _unique_key_line(facts)) if line is not None]
    if not more:
        return explanation
    return replace(explanation, details=(*explanation.details, *more))


def _by_state(backend: Backend, facts: _Facts) -> Explanation:
    status = facts.status
    if status == "scheduled" and facts.parents_left:
        return _waiting_for_parents(backend, facts)
    if facts.version_wait is not None and (
        status in ("ready", "scheduled") or status == "blocked" and not facts.due
    ):
        return _waiting_for_version(facts)  # a due blocked job waits for its slot first
    if status in ("ready", "scheduled"):
        if facts.due:
            return _waiting(backend, facts)
        return _delayed(facts)
    if status == "blocked":
        return _blocked(backend, facts) if facts.due else _delayed(facts)
    if status == "processing":
        return _running(backend, facts)
    if status == "failed":
        return _failed(facts)
    return _unrunnable(facts)


def why_not_cancelled(found: Explanation) -> str:
    """Why Queue.cancel left job ``found.id``, read after its DELETE found nothing to delete."""
    if found.state == "running":
        return f"it is being run by {found.worker or 'a worker'}"
    if not found.exists:
        return "no job has that id (it may have finished, or been cancelled or purged)"
    return f"it is {found.state} now"  # it changed between the DELETE and this read


def _possible(job_id: int) -> bool:
    return JOB_ID_RANGE[0] <= job_id <= JOB_ID_RANGE[1]


class _Facts:
    """A job row read leniently: every column as the type batchq writes, or None (and a note)."""

    def __init__(self, row: Row) -> None:
        self.notes: list[str] = []
        self.id = int(row["id"])
        self.queue = stored_text(row["queue"])
        self.task = stored_text(row["task"])
        self.status = stored_text(row["status"])
        self.priority = self._whole("priority", row["priority"])
        self.error_count = self._whole("error_count", row["error_count"])
        self.max_errors = self._whole("max_errors", row["max_errors"])
        self.last_error = None if row["last_error"] is None else stored_text(row["last_error"])
        self.worker = None if row["locked_by"] is None else stored_text(row["locked_by"])
        self.run_at = stored_time(row["run_at"])
        self.processing_at = stored_time(row["processing_at"])
        self.created_at = stored_time(row["created_at"])
        self.due = bool(row["due"])
        self.due_in_seconds = stored_seconds(row["due_in_seconds"])
        self.running_seconds = stored_seconds(row["running_seconds"])
        self.delay_seconds = stored_seconds(row["delay_seconds"])
        self.paused = bool(row["paused"])
        self.concurrency_key = None if row["concurrency_key"] is None else stored_text(row["concurrency_key"])
        limit = row["concurrency_limit"]  # NULL for a job without a key
        self.concurrency_limit = None if limit is None else self._whole("concurrency_limit", limit)
        self.key_active = int(row["key_active"] or 0)
        self.unique_key = None if row["unique_key"] is None else stored_text(row["unique_key"])
        version = row["task_version"]  # NULL: enqueued before schema 013, version 1
        self.task_version = 1 if version is None else self._whole("task_version", version)
        self.version_wait = None if row["version_wait"] is None else stored_text(row["version_wait"])
        self.backoff_seconds = stored_seconds(row["backoff"])
        self.parents_left = (
            self._whole("parents_left", row["parents_left"]) if row["parents_left"] is not None else None
        )
        self.expires_at = stored_time(row["expires_at"])  # None: it never expires
        self.expires_in_seconds = stored_seconds(row["expires_in_seconds"])
        self.progress = self._fraction(row["progress"])
        message = row["progress_message"]
        self.progress_message = None if message is None else self._progress_message(stored_text(message))
        self.progress_at = stored_time(row["progress_at"])
        self.progress_age_seconds = stored_seconds(row["progress_age_seconds"])
        this_try = row["progress_this_try"]
        running = self.status == "processing"
        self.progress_this_try = None if this_try is None or not running else bool(this_try)
        self.snoozes = self._whole("snoozes", row["snoozes"])
        self.rate_key = None if row["rate_key"] is None else stored_text(row["rate_key"])
        self.key_rate = stored_rate(row["rate_limit"], row["rate_period"])
        self.rate_held_last = bool(row["rate_held_last"])  # its latest wait is its key rate's
        self.snoozed_last = bool(row["snoozed_last"])  # its latest wait is a snooze's, not a backoff's

    def _fraction(self, value: Any) -> float | None:
        """The progress column as a fraction; None (and a note) when it is none."""
        fraction = stored_fraction(value)
        if fraction is None and value is not None:
            self.notes.append(
                f"progress is {value!r:.60}, not a fraction from 0 to 1 (a row written by hand)"
            )
        return fraction

    def _progress_message(self, text: str) -> str:
        if len(text) > PROGRESS_MESSAGE_MAX_CHARS:
            self.notes.append(
                f"progress_message is longer than {PROGRESS_MESSAGE_MAX_CHARS} characters (a row written "
                "by hand): cut short here"
            )
        return clean_message(text)

    def _whole(self, column: str, value: Any) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        self.notes.append(f"{column} is {value!r}, not a whole number (a row written by hand)")
        return None

    def common(self) -> dict[str, Any]:
        """The fields every explanation of an existing row carries."""
        return {
            "id": self.id,
            "queue": self.queue,
            "task": self.task,
            "status": self.status,
            "priority": self.priority,
            "error_count": self.error_count,
            "max_errors": self.max_errors,
            "last_error": self.last_error,
            "created_at": self.created_at,
            "run_at": self.run_at,
            "concurrency_key": self.concurrency_key,
            "concurrency_limit": self.concurrency_limit,
            "key_active": self.key_active if self.concurrency_key is not None else None,
            "task_version": self.task_version,
            "version_wait": self.version_wait,
            "backoff_seconds": self.backoff_seconds,
            "due_in_seconds": self.due_in_seconds,
            "expires_at": self.expires_at,
            "snoozes": self.snoozes,
            "rate_key": self.rate_key,
            "key_rate": None if self.key_rate is None else str(self.key_rate),
            "queue_paused": self.paused,
            "unique_key": self.unique_key,
            "progress": self.progress,
            "progress_message": self.progress_message,
            "progress_at": self.progress_at,
            "progress_age_seconds": self.progress_age_seconds,
            "progress_this_try": self.progress_this_try,
            "notes": tuple(self.notes),
        }

    def paused_line(self) -> str:
        return f"queue {self.queue} is paused: no worker claims from it until `batchq resume {self.queue}`"

    @property
    def expired(self) -> bool:
        """Failed by its expiry (Backend.expire_due), not by its tries."""
        return self.status == "failed" and self.last_error == EXPIRED_REASON

    def expiry_line(self) -> str | None:
        """A waiting job's expiry, if it has one: when, and that no worker starts it after."""
        if self.expires_at is None:
            return None
        seconds = self.expires_in_seconds
        if seconds is not None and seconds <= 0:
            return (
                f"it expired at {format_time(self.expires_at)}{_ago(seconds)} before it started: no worker "
                "will claim it, and a worker fails it as expired within a second of looking"
            )
        return (
            f"it expires at {format_time(self.expires_at)}{_in(seconds)}: not started by then, it never runs"
        )

    def tries(self) -> str:
        count = "?" if self.error_count is None else str(self.error_count)
        most = "?" if self.max_errors is None else str(self.max_errors)
        return f"{count} of {most} {'try' if most == '1' else 'tries'}"


def _waiting(backend: Backend, facts: _Facts) -> Explanation:
    ahead = backend.stores.inspection.jobs_ahead(facts.id)  # None: gone meanwhile
    due = f"due since {format_time(facts.run_at)}{_ago(facts.due_in_seconds)}"
    held = _held(backend, facts.queue)
    if facts.paused:
        summary = f"job {facts.id}: waiting, {due}, but not claimed: {facts.paused_line()}"
    elif held.line is not None:
        summary = f"job {facts.id}: waiting, {due}, but not claimed yet: {held.line}"
    else:
        summary = f"job {facts.id}: waiting, {due}"
    details = [_about(facts)]
    if ahead is not None:
        details.append(
            f"{_n_jobs(ahead)} ahead of it in queue {facts.queue} (claimed first: higher priority, "
            "then due earlier, then lower id)"
        )
    if facts.status == "scheduled":
        details.append("its delay has passed: a worker makes it ready within a second of looking")
    if facts.error_count:
        details.append(f"a retry: it has failed {facts.tries()}; last error: {_first_line(facts)}")
    expiry = facts.expiry_line()
    if expiry is not None:
        details.append(expiry)
    if held.limits:
        details.append(held.limits)
    return Explanation(
        state="waiting",
        summary=summary,
        details=tuple(details),
        jobs_ahead=ahead,
        held_by=held.by,
        next_start_at=held.next_at,
        **facts.common(),
    )


@dataclass(frozen=True)
class _Held:
    by: str | None = None  # "rate", "max_running"
    line: str | None = None  # why no job of the queue starts now, and when one may
    limits: str | None = None  # the queue's limits and their use, for the details
    next_at: datetime | str | None = None


def _held(backend: Backend, queue: str) -> _Held:
    """Whether the queue's flow limits let a job start now (batchq.policy.flow), on the server's clock."""
    flow = backend.stores.flow
    limits = flow.limits(queue).get(queue)
    if limits is None:
        return _Held()
    usage = flow.usage(queue, limits)
    parts = []
    if limits.rate is not None:
        parts.append(
            f"rate {limits.rate} ({usage.started} started in the last {format_duration(limits.rate.period)})"
        )
    if limits.max_running is not None:
        parts.append(f"max_running {limits.max_running} ({usage.running} running)")
    described = f"queue {queue}'s flow limits: {', '.join(parts)}"
    by = usage.holder(limits)
    if by == "rate":
        when = f"{format_time(usage.next_at)}{_in(usage.next_in)}" if usage.next_at is not None else "soon"
        line = f"queue {queue}'s rate limit {limits.rate} is reached: the next job may start at {when}"
        return _Held(by, line, described, usage.next_at)
    if by == "max_running":
        line = (
            f"queue {queue} runs {counted(usage.running, 'job')}, its max_running "
            f"{limits.max_running}: the next starts when one of them ends"
        )
        return _Held(by, line, described)
    return _Held(limits=described)


def _blocked(backend: Backend, facts: _Facts) -> Explanation:
    limit = 1 if facts.concurrency_limit is None else facts.concurrency_limit
    slots = f"{facts.key_active} of its {counted(limit, 'slot')} taken"
    if facts.key_active >= limit:
        why = f"{slots} (ready or running): it becomes ready when one of those ends"
    else:
        why = f"{slots}: a worker admits it within a second of looking"
    holders = backend.stores.inspection.key_holders(facts.concurrency_key)
    details = [_about(facts)]
    if holders:
        held = ", ".join(_holder(row) for row in holders)
        more = f" and {facts.key_active - len(holders)} more" if facts.key_active > len(holders) else ""
        details.append(f"its key's slots are held by {held}{more}")
    if facts.paused:
        details.append(facts.paused_line())
    return Explanation(
        state="blocked",
        key_holders=tuple(holder.id for holder in holders),
        summary=f"job {facts.id}: waiting for a slot of concurrency key {facts.concurrency_key!r}, {why}",
        details=tuple(details),
        **facts.common(),
    )


def _waiting_for_version(facts: _Facts) -> Explanation:
    """Put back by a worker that knows only an older version of the task (worker.py)."""
    version = "?" if facts.task_version is None else str(facts.task_version)
    summary = (
        f"job {facts.id}: waiting for a worker that knows version {version} of task {facts.task}; "
        f"{facts.version_wait} and put it back (not counted as a try)"
    )
    if facts.due:
        when = f"due again since {format_time(facts.run_at)}{_ago(facts.due_in_seconds)}"
    else:
        when = f"claimed again from {format_time(facts.run_at)}{_in(facts.due_in_seconds)}"
    details = [
        _about(facts),
        f"{when}: a worker with the new code runs it; an outdated one puts it back again",
        f"if it keeps waiting, deploy the code with this task version to every worker of queue {facts.queue}",
    ]
    if facts.paused:
        details.append(facts.paused_line())
    waiting = facts.due and facts.status != "blocked"
    return Explanation(
        state="waiting" if waiting else "delayed",
        summary=summary,
        details=tuple(details),
        delay_reason=None if waiting else "version",
        **facts.common(),
    )


def _holder(holder: KeyHolder) -> str:
    if holder.status == "processing":
        worker = "an unknown worker" if holder.locked_by is None else holder.locked_by
        return f"job {holder.id} (running on {worker})"
    return f"job {holder.id} (ready, not yet claimed)"


def _waiting_for_parents(backend: Backend, facts: _Facts) -> Explanation:
    """A job enqueued with after= whose parents have not all succeeded (batchq.jobs.dependencies)."""
    found = waiting_for(backend, facts.id)
    named = ", ".join(f"job {parent} ({status or 'gone'})" for parent, status in found.parents)
    more = found.total - len(found.parents)
    named += f" and {more} more" if more > 0 else ""
    return Explanation(
        state="delayed",
        summary=f"job {facts.id}: waiting for {counted(facts.parents_left or 0, 'parent')} to succeed: "
        f"{named}",
        details=(_about(facts),),
        delay_reason="parents",
        waiting_for=tuple(parent for parent, _ in found.parents),
        **facts.common(),
    )


def _delayed(facts: _Facts) -> Explanation:
    until = f"delayed until {format_time(facts.run_at)}{_in(facts.due_in_seconds)}"
    if facts.rate_held_last:  # key_rate_hold wrote run_at, after any failure or snooze
        reason = "rate"
        rate = facts.key_rate or "?"
        why = f"its rate key {facts.rate_key!r} ({rate}) was at its limit: it waits, uncounted, for a slot"
    elif facts.snoozed_last:  # job_snooze wrote run_at, after any failure
        reason = "snooze"
        times = counted(facts.snoozes or 0, "time")
        why = f"its task snoozed it (batchq.Snooze), {times} so far, not counted as tries"
    elif facts.error_count:  # job_error wrote run_at: a backoff after the latest failure
        reason = "backoff"
        why = f"retry backoff after failure {facts.tries()}; last error: {_first_line(facts)}"
    elif facts.error_count == 0:
        reason = "delay"
        asked = "" if facts.delay_seconds is None else f" of {format_duration(facts.delay_seconds)}"
        why = f"enqueued with a delay{asked}"
    else:
        reason = None
        why = "why cannot be told: its error_count is not a number"
    details = [_about(facts)]
    if facts.paused:
        details.append(facts.paused_line())
    expiry = facts.expiry_line()
    if expiry is not None:
        details.append(expiry)
    return Explanation(
        state="delayed",
        summary=f"job {facts.id}: {until}: {why}",
        details=tuple(details),
        delay_reason=reason,
        delay_seconds=facts.delay_seconds if reason == "delay" else None,
        **facts.common(),
    )


def _running(backend: Backend, facts: _Facts) -> Explanation:
    alive = backend.stores.inspection.worker_alive(facts.worker)
    worker = facts.worker if facts.worker is not None else "(no worker recorded)"
    since = f"since {format_time(facts.processing_at)}{_for(facts.running_seconds)}"
    if alive is True:
        verdict = "its worker is alive"
    elif alive is False:
        verdict = "its worker is gone: `batchq gc-processing` puts the job back"
    else:
        verdict = "whether its worker is alive cannot be told from here"
    return Explanation(
        state="running",
        summary=f"job {facts.id}: running on {worker} {since}; {verdict}",
        details=(_about(facts),),
        worker=facts.worker,
        processing_at=facts.processing_at,
        running_seconds=facts.running_seconds,
        worker_alive=alive,
        **facts.common(),
    )


def _failed(facts: _Facts) -> Explanation:
    if facts.expired:
        return _expired(facts)
    error = facts.last_error if facts.last_error is not None else "(none recorded)"
    return Explanation(
        state="failed",
        summary=f"job {facts.id}: failed after {facts.tries()}; no worker will run it again",
        details=(
            _about(facts),
            "last error:",
            *("    " + line for line in error.splitlines() or [""]),
            f"to run it again: batchq gc-error --id {facts.id} --requeue (or --delete)",
        ),
        **facts.common(),
    )


def _expired(facts: _Facts) -> Explanation:
    """Failed as 'expired': it had not started by its expiry (enqueue(expires=...))."""
    when = f"at {format_time(facts.expires_at)}" if facts.expires_at is not None else "(when: not recorded)"
    tries = f" after {facts.tries()}" if facts.error_count else ""
    return Explanation(
        state="failed",
        summary=f"job {facts.id}: expired {when}{tries} before it started; no worker will run it",
        details=(
            _about(facts),
            "last error: expired (batchq.errors.JobExpired): not started by its expiry, never run",
            "a requeue keeps its expiry, past: enqueue it again instead; "
            f"to drop it: batchq gc-error --id {facts.id} --delete",
        ),
        **facts.common(),
    )


def _unrunnable(facts: _Facts) -> Explanation:
    return Explanation(
        state="unrunnable",
        summary=f"job {facts.id}: its status {facts.status!r} is none batchq knows; no worker will claim it",
        details=(_about(facts), "fix its status or delete the row by hand"),
        **facts.common(),
    )


def _unknown(job_id: int) -> Explanation:
    return Explanation(
        id=job_id,
        state="unknown",
        summary=(
            f"no job {job_id}: it may have finished (batchq deletes a job once it succeeds; if its "
            f"queue keeps history, `batchq history --id {job_id}` shows it), been cancelled or "
            "purged, or never existed"
        ),
    )


# -- words -------------------------------------------------------------------------------


def _about(facts: _Facts) -> str:
    priority = "?" if facts.priority is None else str(facts.priority)
    version = f" (version {facts.task_version})" if facts.task_version not in (1, None) else ""
    snoozed = f", snoozed {counted(facts.snoozes, 'time')}" if facts.snoozes else ""
    key_rate = ""
    if facts.rate_key is not None:  # what holds it back when its key's rate is reached
        rate = facts.key_rate or "?"
        key_rate = f"; rate key {facts.rate_key!r} at {rate}"
    return (
        f"queue {facts.queue}, task {facts.task}{version}, priority {priority}, "
        f"created {format_time(facts.created_at)}, {facts.tries()} used{snoozed}{key_rate}"
    )


def _progress_line(facts: _Facts) -> str | None:
    """What its task last reported (batchq.progress), and whether this try reported it."""
    if facts.progress is None and facts.progress_message is None:
        return None
    shown = "?" if facts.progress is None else percent(facts.progress)
    if facts.progress_message:
        shown += f": {facts.progress_message}"
    if facts.progress_this_try:
        return f"progress: {shown} (reported {_when(facts.progress_at, facts.progress_age_seconds)})"
    return (
        f"progress an earlier try reported: {shown} ({_when(facts.progress_at, facts.progress_age_seconds)})"
    )


def percent(fraction: float) -> str:
    """A fraction as a percentage rounded down to a tenth: 100% only when it is done."""
    return f"{math.floor(fraction * 1000) / 10:g}%"


def _when(at: datetime | str | None, age: float | None) -> str:
    if at is None:
        return "when: not recorded"
    return f"at {format_time(at)}{_ago(-age if age is not None else None)}"


def _unique_key_line(facts: _Facts) -> str | None:
    if facts.unique_key is None:
        return None
    key = f"unique key {facts.unique_key!r}"
    if facts.status in UNIQUE_KEY_HELD_IN:
        return f"{key}: an enqueue with it returns this job instead of writing one"
    return f"{key}: not held while {facts.status}: an enqueue with it writes a new job"


def _first_line(facts: _Facts) -> str:
    lines = (facts.last_error or "").strip().splitlines()
    return lines[0] if lines else "(none recorded)"


def _ago(seconds: float | None) -> str:
    return "" if seconds is None else f" ({format_duration(-seconds)} ago)"


def _in(seconds: float | None) -> str:
    return "" if seconds is None else f" (in {format_duration(seconds)})"


def _for(seconds: float | None) -> str:
    return "" if seconds is None else f" ({format_duration(seconds)})"


def _n_jobs(n: int) -> str:
    return counted(n, "job")
