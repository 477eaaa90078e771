"""Cron schedules in the database: exactly one job per slot, across hosts, with no daemon.

A schedule row holds its next slot (``next_exec``). ``tick()``, run from cron on every host, reads
the due rows and, for each, moves ``next_exec`` on with one compare-and-set UPDATE (``WHERE name
= ? AND next_exec = <the slot it saw>``) and enqueues the slot's job in the SAME transaction: of
any number of hosts ticking at once one UPDATE matches, the others match nothing and enqueue
nothing, and a host that dies between the two statements leaves neither (its transaction rolls
back). Due-ness is the database server's clock; slots come from batchq.jobs.cron.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..backends import Backend, Row, stored_text
from ..core.job import SCHEDULE_KEY, SLOT_KEY  # what every scheduled job's payload gets
from ..core.serializers import loads
from ..errors import BatchqError, ConfigError, PayloadError
from ..policy.bounds import fitting, full_reason, take_turn, trim
from .cron import CATCH_UP_POLICIES, parse_cron, plan
from .jobspec import MAX_ERRORS_RANGE, PRIORITY_RANGE, JobBuilder, Task

log = logging.getLogger("batchq.jobs.schedules")

SCHEDULE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
CATCH_UP_LIMIT_RANGE = (1, 10_000)
# Slots batchq can compute with (Python's datetimes: years 1 to 9999, a day inside either end).
SLOT_RANGE = (
    datetime(1, 1, 2, tzinfo=timezone.utc).timestamp(),
    datetime(9999, 12, 30, tzinfo=timezone.utc).timestamp(),
)
# What fixes a row written by hand: its definition written again, or its next slot set again.
REWRITE_HINT = "write it again with `batchq schedule add` (or sync)"
NEXT_SLOT_HINT = "pause and resume it (`batchq schedule pause/resume`) to set its next slot"
# What a schedules file may say about a schedule (serializer: a file holds plain data, so JSON).
FILE_KEYS = {"cron", "task", "tz", "payload", "queue", "priority", "max_errors", "catch_up", "catch_up_limit"}
# The columns that define a schedule; the rest (next_exec, last_*) is the schedule's state.
DEFINITION = (
    "cron",
    "tz",
    "task",
    "serializer",
    "queue",
    "priority",
    "max_errors",
    "catch_up",
    "catch_up_limit",
)


@dataclass(frozen=True)
class Schedule:
    """A schedule as stored. Times are aware datetimes in the schedule's time zone."""

    name: str
    cron: str
    tz: str
    task: str
    payload: Any
    serializer: str = "json"
    queue: str = "default"
    priority: int = 0
    max_errors: int = 10
    catch_up: str = "latest"
    catch_up_limit: int = 100
    enabled: bool = True
    next_exec: datetime | None = None
    exec_by: str | None = None
    last_slot: datetime | None = None
    last_run_at: datetime | None = None
    last_job_id: int | None = None
    problem: str | None = None  # why its payload cannot be read here (a pickle without the secret)


@dataclass(frozen=True)
class ScheduledJob:
    schedule: str
    slot: datetime
    job_id: int


@dataclass
class TickReport:
    enqueued: list[ScheduledJob] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # catch_up="none": the due slot was missed
    taken: int = 0  # due schedules another ticker advanced first
    failed: list[tuple[str, str]] = field(default_factory=list)  # (schedule, why): retried next tick
    # (schedule, why): slots not enqueued, their queue being full under overflow="reject"; the
    # schedule moved on past them (they are not retried, as a refused enqueue is not)
    refused: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Definition:
    """A validated schedule, ready to write: its row and its payload as given."""

    row: dict[str, Any]
    payload: Any


class Schedules:
    """The schedules of one queue's database. Created by ``Queue.schedules``, with the queue's
    JobBuilder (batchq.jobs.jobspec): a schedule's jobs are checked and built as enqueue's are."""

    def __init__(self, jobs: JobBuilder) -> None:
        self.jobs = jobs
        self.backend = jobs.backend
        self.store = jobs.backend.stores.schedules

    # -- defining ---------------------------------------------------------------------

    def add(
        self,
        name: str,
        cron: str,
        task: Task,
        *,
        tz: str = "UTC",
        payload: Mapping[str, Any] | None = None,
        queue: str = "default",
        priority: int = 0,
        max_errors: int = 10,
        serializer: str = "json",
        catch_up: str = "latest",
        catch_up_limit: int = 100,
    ) -> Schedule:
        """Create a schedule, or update the one of that name. Everything is checked before
        anything is written. Its first job is for its first slot after now; an update keeps its
        next slot unless the cron expression or time zone changed, and a paused one stays paused."""
        definition = self._definition(
            name, cron, task, tz, payload, queue, priority, max_errors, serializer, catch_up, catch_up_limit
        )
        self._write([definition])
        found = self.get(name)
        assert found is not None
        return found

    def _definition(
        self,
        name: str,
        cron: str,
        task: Task,
        tz: str,
        payload: Mapping[str, Any] | None,
        queue: str,
        priority: int,
        max_errors: int,
        serializer: str,
        catch_up: str,
        catch_up_limit: int,
    ) -> _Definition:
        check_schedule_name(name)
        parsed = parse_cron(cron, tz)
        _check_catch_up(catch_up, catch_up_limit)
        _check_payload(payload)
        spec = self.jobs.spec(
            task, queue=queue, priority=priority, max_errors=max_errors, serializer=serializer
        )
        template = self.jobs.template(spec)
        # The payload as stored, then as a job would carry it: both checked as enqueue checks them.
        stored = self.jobs.row(template, None if payload is None else dict(payload))["payload"]
        self.jobs.row(template, job_payload(payload, name, parsed.local(parsed.next_after(0))))
        row = {
            "name": name,
            "cron": parsed.expr,
            "tz": tz,
            "task": template["task"],
            "payload": stored,
            "serializer": serializer,
            "queue": queue,
            "priority": priority,
            "max_errors": max_errors,
            "catch_up": catch_up,
            "catch_up_limit": catch_up_limit,
        }
        return _Definition(row, None if payload is None else dict(payload))

    def _write(self, definitions: list[_Definition], remove: Sequence[str] = ()) -> SyncReport:
        """Upsert the definitions that differ from what is stored, and delete ``remove``, in one
        transaction; next slots follow the server's clock."""
        stored = {schedule.name: schedule for schedule in self.list()}
        report = SyncReport()
        now = float(self.server_now())
        for definition in definitions:
            name = definition.row["name"]
            if name in stored and _same(stored[name], definition):
                report.unchanged.append(name)
            else:
                (report.updated if name in stored else report.created).append(name)
        changed = [d for d in definitions if d.row["name"] not in report.unchanged]

        def write() -> None:
            with self.backend.transaction():
                for definition in changed:
                    cron = parse_cron(definition.row["cron"], definition.row["tz"])
                    self.store.upsert(definition.row, cron.next_after(int(now)))
                for name in remove:
                    self.store.delete(name)

        self.backend.retrying(write)
        report.removed = list(remove)
        return report

    def remove(self, name: str) -> bool:
        """Delete a schedule (the jobs it enqueued stay). False if there was none."""
        return self.store.delete(check_schedule_name(name))

    def pause(self, name: str) -> bool:
        """tick leaves it alone until resumed. False if there is no such schedule."""
        return self.store.pause(check_schedule_name(name))

    def resume(self, name: str) -> bool:
        """Run it again from its first slot after now: slots that passed while it was paused are
        skipped. False if there is no such schedule, or it was not paused."""
        schedule = self.get(check_schedule_name(name))
        if schedule is None or schedule.enabled:
            return False
        next_exec = parse_cron(schedule.cron, schedule.tz).next_after(int(self.server_now()))
        return self.store.resume(name, next_exec)

    def sync(self, schedules: Mapping[str, Mapping[str, Any]], *, prune: bool = False) -> SyncReport:
        """Make the stored schedules match ``schedules`` ({name: {cron, task, tz, payload, ...}}):
        create and update them, and with ``prune`` delete the others. All are checked before
        anything is written, and written in one transaction."""
        definitions = [self._named(name, spec) for name, spec in schedules.items()]
        stale = [s.name for s in self.list() if s.name not in schedules] if prune else []
        return self._write(definitions, stale)

    def sync_file(self, path: str | Path, *, prune: bool = False) -> SyncReport:
        return self.sync(read_schedules_file(path), prune=prune)

    def _named(self, name: str, spec: Mapping[str, Any]) -> _Definition:
        """A definition from a file, its errors naming the schedule."""
        try:
            return self._from_mapping(name, spec)
        except BatchqError as exc:
            exc.args = (f"schedule {name!r}: {exc}",)
            raise

    def _from_mapping(self, name: str, spec: Mapping[str, Any]) -> _Definition:
        if not isinstance(spec, Mapping):
            raise ConfigError("expected a table of settings (cron, task, ...)")
        unknown = sorted(set(spec) - FILE_KEYS)
        if unknown:
            raise ConfigError(f"unknown setting {unknown[0]!r}; use {', '.join(sorted(FILE_KEYS))}")
        for required in ("cron", "task"):
            if required not in spec:
                raise ConfigError(f"{required!r} is missing")
        options = {key: value for key, value in spec.items() if key not in ("cron", "task")}
        return self._definition(
            name,
            spec["cron"],
            spec["task"],
            options.get("tz", "UTC"),
            options.get("payload"),
            options.get("queue", "default"),
            options.get("priority", 0),
            options.get("max_errors", 10),
            "json",
            options.get("catch_up", "latest"),
            options.get("catch_up_limit", 100),
        )

    # -- reading ------------------------------------------------------------------------

    def list(self) -> list[Schedule]:
        """Every schedule, by name."""
        return [self._schedule(row) for row in self.store.all()]

    def get(self, name: str) -> Schedule | None:
        return next((s for s in self.list() if s.name == name), None)

    def _schedule(self, row: Row) -> Schedule:
        """A row as listed. One written by hand (SQLite stores any type in any column) is listed
        with its odd values as text and what is wrong in ``problem``; tick reports it too."""
        problems: list[str] = []

        def checked(read: Any, column: str) -> Any:
            try:
                return read(row[column], column)
            except ConfigError as exc:
                problems.append(str(exc))
                return "NULL" if row[column] is None else stored_text(row[column])  # shown as it is

        text = {column: checked(_text, column) for column in ("name", "cron", "tz", "task", "serializer")}
        text.update({column: checked(_text, column) for column in ("queue", "catch_up")})
        whole = {column: checked(_whole, column) for column in ("priority", "max_errors", "catch_up_limit")}
        tz = None
        try:
            tz = parse_cron(text["cron"], text["tz"]).tz
        except ConfigError as exc:
            problems.append(str(exc))
        try:
            payload = loads(row["payload"], text["serializer"], self.jobs.secret)
        except PayloadError as exc:
            payload = None
            problems.append(str(exc))

        def when(column: str) -> datetime | None:
            if row[column] is None or tz is None:
                return None
            try:
                return datetime.fromtimestamp(_epoch(row[column], column), tz)
            except ConfigError as exc:
                problems.append(str(exc))
                return None

        if row["next_exec"] is None and tz is not None:  # NOT NULL: what reads as none is no time
            problems.append(f"next_exec is not a time: {NEXT_SLOT_HINT}")
        problems += _range_problems(whole, text["catch_up"])
        if row["enabled"] not in (0, 1):  # tick reads only 1 as enabled (True and False are 1 and 0)
            problems.append(f"enabled is {_brief(row['enabled'])}, not 1 or 0: pause or resume it")
        return Schedule(
            name=text["name"],
            cron=text["cron"],
            tz=text["tz"],
            task=text["task"],
            payload=payload,
            serializer=text["serializer"],
            queue=text["queue"],
            priority=whole["priority"],
            max_errors=whole["max_errors"],
            catch_up=text["catch_up"],
            catch_up_limit=whole["catch_up_limit"],
            enabled=bool(row["enabled"]),
            next_exec=when("next_exec"),
            exec_by=None if row["exec_by"] is None else stored_text(row["exec_by"]),
            last_slot=when("last_slot"),
            last_run_at=when("last_run_at"),
            last_job_id=_last_job_id(row["last_job_id"]),
            problem="; ".join(problems) or None,
        )

    def server_now(self) -> float:
        """The database server's clock, in seconds since the epoch."""
        return self.store.server_now()

    # -- ticking --------------------------------------------------------------------------

    def tick(self) -> TickReport:
        """Enqueue the jobs of every due schedule, each slot once however many hosts tick."""
        report = TickReport()
        exec_by = f"{socket.gethostname()}:{os.getpid()}"
        for row in self.store.due():
            try:
                self._fire(row, exec_by, report)
            except BatchqError as exc:  # this schedule's jobs cannot be written here: the others go on
                log.warning("schedule %s: %s", row["name"], exc)
                report.failed.append((row["name"], str(exc)))
        return report

    def _fire(self, row: Row, exec_by: str, report: TickReport) -> None:
        """One due schedule: its jobs prepared and checked first, then the compare-and-set and
        their INSERTs in one transaction (retried on deadlocks). A row written by hand with an
        odd value raises ConfigError naming it, before anything is written."""
        cron = parse_cron(_text(row["cron"], "cron"), _text(row["tz"], "tz"))
        if row["next_exec"] is None:  # NOT NULL: what reads as none is no time
            raise ConfigError(f"next_exec is not a time: {NEXT_SLOT_HINT}")
        seen = int(_epoch(row["next_exec"], "next_exec"))
        catch_up, limit = _text(row["catch_up"], "catch_up"), _whole(row["catch_up_limit"], "catch_up_limit")
        _check_catch_up(catch_up, limit)
        todo = plan(cron, catch_up, limit, seen, float(row["now"]))
        spec = self.jobs.spec(
            _text(row["task"], "task"),
            queue=_text(row["queue"], "queue"),
            priority=_whole(row["priority"], "priority"),
            max_errors=_whole(row["max_errors"], "max_errors"),
            serializer=_text(row["serializer"], "serializer"),
        )
        template = self.jobs.template(spec)
        payload = loads(row["payload"], row["serializer"], self.jobs.secret)
        jobs = [
            (slot, self.jobs.row(template, job_payload(payload, row["name"], cron.local(slot))))
            for slot in todo.slots
        ]

        def advance_and_enqueue() -> tuple[list[int], str | None] | None:
            with self.backend.transaction():
                if not self.store.advance(row["name"], seen, todo.next_exec, exec_by):
                    return None  # another ticker advanced it first: the slot is its to enqueue
                ids, refused = _write_jobs(self.backend, row["queue"], [job for _, job in jobs])
                if ids:
                    self.store.ran(row["name"], jobs[len(ids) - 1][0], ids[-1])
                return ids, refused

        done = self.backend.retrying(advance_and_enqueue)
        if done is None:
            report.taken += 1
            return
        ids, refused = done
        report.enqueued += [ScheduledJob(row["name"], cron.local(s), i) for (s, _), i in zip(jobs, ids)]
        if refused is not None:
            why = f"{len(jobs) - len(ids)} of {len(jobs)} due slots not enqueued: {refused}"
            log.warning("schedule %s: %s", row["name"], why)
            report.refused.append((row["name"], why))
        if not jobs:
            report.skipped.append(row["name"])


def _write_jobs(backend: Backend, queue: str, jobs: Sequence[dict[str, Any]]) -> tuple[list[int], str | None]:
    """A tick's INSERTs, in its transaction, within the queue's bound (batchq.policy.bounds): under
    reject only the oldest slots there is room for are written (and why the others were not is
    returned); under drop_oldest all are, then the oldest waiting jobs beyond the bound fail."""
    bound = take_turn(backend, queue, None) if jobs else None  # ticks into one queue take turns
    if bound is None:
        return [backend.stores.jobs.insert_job(job) for job in jobs], None
    count = fitting(backend, queue, bound, len(jobs), None)
    ids = [backend.stores.jobs.insert_job(job) for job in jobs[:count]]
    trim(backend, queue, bound, None)
    return ids, None if count == len(jobs) else full_reason(queue, bound)


def job_payload(payload: Mapping[str, Any] | None, name: str, slot: datetime) -> dict[str, Any]:
    """A scheduled job's payload: the schedule's, plus its name and its slot (ISO 8601, in the
    schedule's time zone)."""
    return {**(payload or {}), SCHEDULE_KEY: name, SLOT_KEY: slot.isoformat()}


def read_schedules_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """A TOML file of ``[schedules.NAME]`` tables, each with cron, task and optional settings."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]
    try:
        data = tomllib.loads(Path(path).read_text("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read schedules file {str(path)!r}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"schedules file {str(path)!r} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ConfigError(
            f"schedules file {str(path)!r} is nested too deeply to read: flatten it "
            "(a few hundred levels at most)"
        ) from None
    extra = sorted(set(data) - {"schedules"})
    if extra:
        raise ConfigError(
            f"schedules file {str(path)!r}: unknown top-level key {extra[0]!r}; put each schedule "
            "in a [schedules.NAME] table"
        )
    schedules = data.get("schedules", {})
    if not isinstance(schedules, dict):
        raise ConfigError(f"schedules file {str(path)!r}: 'schedules' must be tables, [schedules.NAME]")
    return schedules


def check_schedule_name(name: str) -> str:
    if not isinstance(name, str) or not SCHEDULE_NAME.fullmatch(name):
        raise ConfigError(
            f"bad schedule name {name!r}: use 1-128 letters, digits, '_', '-', '.', ':', "
            "starting with a letter or digit"
        )
    return name


def _range_problems(whole: dict[str, Any], catch_up: Any) -> list[str]:
    """What tick would refuse in a listed row's numbers (add and sync never write them)."""
    problems = []
    for column, (low, high) in (("priority", PRIORITY_RANGE), ("max_errors", MAX_ERRORS_RANGE)):
        value = whole[column]
        if isinstance(value, int) and not low <= value <= high:
            problems.append(f"bad {column} {value}: use a whole number from {low} to {high}; {REWRITE_HINT}")
    if isinstance(whole["catch_up_limit"], int) and isinstance(catch_up, str):
        try:
            _check_catch_up(catch_up, whole["catch_up_limit"])
        except ConfigError as exc:
            problems.append(f"{exc}; {REWRITE_HINT}")
    return problems


def _whole(value: Any, column: str) -> int:
    """A whole-number column as stored (a row written by hand on SQLite may hold any type)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{column} is {_brief(value)}, not a whole number: {REWRITE_HINT}")
    return value


def _text(value: Any, column: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{column} is {_brief(value)}, not text: {REWRITE_HINT}")
    return value


def _epoch(value: Any, column: str) -> float:
    """A time column as the queries read it, seconds since the epoch, within the slots batchq
    can compute with (PostgreSQL stores times up to the year 294276, and infinity)."""
    seconds = (
        float(value) if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool) else None
    )
    if seconds is None or not SLOT_RANGE[0] <= seconds <= SLOT_RANGE[1]:
        hint = NEXT_SLOT_HINT if column == "next_exec" else REWRITE_HINT
        raise ConfigError(f"{column} is not a time batchq can use ({_brief(value)}): {hint}")
    return seconds


def _last_job_id(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_catch_up(catch_up: str, limit: int) -> None:
    if catch_up not in CATCH_UP_POLICIES:
        raise ConfigError(f"bad catch_up {catch_up!r}: use 'latest', 'all' or 'none'")
    low, high = CATCH_UP_LIMIT_RANGE
    if isinstance(limit, bool) or not isinstance(limit, int) or not low <= limit <= high:
        raise ConfigError(f"bad catch_up_limit {limit!r}: use a whole number from {low} to {high}")


def _check_payload(payload: Any) -> None:
    if payload is not None and not isinstance(payload, Mapping):
        raise ConfigError(
            f"bad schedule payload {payload!r}: use a dict (or None); each job gets it with "
            f"'{SCHEDULE_KEY}' and '{SLOT_KEY}' added"
        )
    reserved = sorted({SCHEDULE_KEY, SLOT_KEY} & set(payload or {}))
    if reserved:
        raise ConfigError(f"bad schedule payload: {reserved[0]!r} is set by the scheduler; rename that key")


def _same(stored: Schedule, definition: _Definition) -> bool:
    """Nothing to write: the stored definition equals the new one (payloads compared as values)."""
    row = definition.row
    return (
        all(getattr(stored, key) == row[key] for key in DEFINITION)
        and stored.problem is None
        and stored.payload == definition.payload
    )
