"""Cron slots: a croniter expression read in a time zone, its slots as whole seconds since the
epoch (UTC), and which slots a tick enqueues under each catch-up policy.

Pure time arithmetic with no database, so it is tested with a fake clock. The database decides
*when* it is (its server's clock); this module only answers questions about given instants.

Daylight saving, checked against Europe/Berlin, New York and Lord Howe (a 30-minute shift):
- a wall-clock time the spring-forward gap skips (02:30 on that day) runs at the first instant
  after the gap (03:00), once: nothing is skipped;
- a wall-clock time the fall-back repeats (02:30 twice) runs once, at its first occurrence, unless
  the expression runs every hour (`0 * * * *`, `*/15 * * * *`), whose repeated hour is a real
  hour that runs like any other: nothing runs twice for one wall-clock slot.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, CroniterError, croniter

from ..errors import ConfigError

CATCH_UP_POLICIES = ("latest", "all", "none")
# With catch_up="none", a slot a tick sees at most this long after its time is on time (cron
# starts `batchq tick` once a minute, so a slot can be up to a minute old, plus clock skew);
# an older one was missed and is skipped.
ON_TIME_SECONDS = 120
# Fall-back repeats skipped in a row at most (an expression firing every second of one hour).
_MAX_SKIPPED_REPEATS = 4000


@dataclass(frozen=True)
class Cron:
    """A validated cron expression in a time zone. Five fields, or six with seconds first
    (`*/5 * * * * *`: every five seconds), or a nickname (@hourly, @daily, @weekly, ...)."""

    expr: str
    tz: ZoneInfo

    @property
    def runs_every_hour(self) -> bool:
        """Its hour field is `*`: a repeated hour at fall-back is a real hour, run as any other."""
        expanded, _ = croniter.expand(self.expr, second_at_beginning=True)
        return expanded[1] == ["*"]

    def local(self, slot: int) -> datetime:
        """A slot as an aware datetime in the schedule's time zone (fold=1 on the second pass of a
        repeated time)."""
        return datetime.fromtimestamp(slot, self.tz)

    def next_after(self, instant: int) -> int:
        """The first slot strictly after ``instant``."""
        it = croniter(self.expr, self.local(instant), second_at_beginning=True)
        return self._first_kept(lambda: it.get_next(datetime), lambda slot: slot > instant)

    def latest_at_or_before(self, instant: int) -> int | None:
        """The last slot at or before ``instant``; None if the expression never fired before it."""
        it = croniter(self.expr, self.local(instant + 1), second_at_beginning=True)
        try:
            return self._first_kept(lambda: it.get_prev(datetime), lambda slot: slot <= instant)
        except ConfigError:
            return None

    def _first_kept(self, step: Callable[[], datetime], in_range: Callable[[int], bool]) -> int:
        every_hour = self.runs_every_hour
        for _ in range(_MAX_SKIPPED_REPEATS):
            try:
                slot = int(step().timestamp())
            except CroniterBadDateError:
                raise ConfigError(
                    f"cron expression {self.expr!r} never fires: fix its day and month"
                ) from None
            if not in_range(slot):
                continue
            if self.local(slot).fold and not every_hour:
                continue  # the second occurrence of a wall-clock time the fall-back repeats
            return slot
        raise ConfigError(f"cron expression {self.expr!r}: no slot found within {_MAX_SKIPPED_REPEATS} steps")


def parse_cron(expr: str, tz: str = "UTC") -> Cron:
    """Check an expression and a time zone name; ConfigError naming the fix if either is bad."""
    zone = parse_tz(tz)
    if not isinstance(expr, str) or not expr.strip():
        raise ConfigError(f"bad cron expression {expr!r}: use five fields (`0 7 * * mon-fri`) or @hourly")
    text = " ".join(expr.split())
    try:
        if not croniter.is_valid(text, second_at_beginning=True):
            raise CroniterBadCronError(text)
        cron = Cron(text, zone)
        cron.runs_every_hour  # noqa: B018 - expands it once more, as tick will
    except (CroniterError, ValueError, KeyError, TypeError):
        raise ConfigError(
            f"bad cron expression {expr!r}: use five fields (minute hour day month weekday), six "
            "with seconds first, or @hourly / @daily / @weekly / @monthly / @yearly"
        ) from None
    cron.next_after(0)  # one that never fires (`0 0 30 2 *`) is refused now, not at each tick
    return cron


def parse_tz(name: str) -> ZoneInfo:
    if not isinstance(name, str) or not name or name.startswith(("/", ".")) or ".." in name:
        raise ConfigError(f"unknown time zone {name!r}: use an IANA name such as 'Europe/Berlin' or 'UTC'")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ConfigError(
            f"unknown time zone {name!r}: use an IANA name such as 'Europe/Berlin' or 'UTC' "
            "(install the tzdata package if the system has no zone files)"
        ) from None


@dataclass(frozen=True)
class Plan:
    """What one tick does for a due schedule: enqueue ``slots`` (oldest first), then wait for
    ``next_exec``, the first slot after now."""

    slots: list[int]
    next_exec: int


def plan(cron: Cron, catch_up: str, limit: int, seen: int, now: float) -> Plan:
    """The jobs for a schedule whose next_exec was ``seen`` (at or before ``now``, the server's
    clock): every due slot under "all" (the latest ``limit``), the latest under "latest", the
    latest only if it is on time under "none"."""
    current = math.floor(now)
    latest = cron.latest_at_or_before(current)
    if latest is None or latest < seen:
        latest = seen  # next_exec is itself the slot due (a row edited by hand may hold any time)
    next_exec = cron.next_after(max(current, seen))
    if catch_up == "latest":
        return Plan([latest], next_exec)
    if catch_up == "none":
        return Plan([latest] if current - latest <= ON_TIME_SECONDS else [], next_exec)
    slots: list[int] = []
    slot: int | None = latest
    while slot is not None and slot >= seen and len(slots) < limit:
        slots.append(slot)
        slot = cron.latest_at_or_before(slot - 1)
    return Plan(slots[::-1] or [latest], next_exec)
