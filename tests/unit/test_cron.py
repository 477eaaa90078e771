"""Cron slots (batchq.jobs.cron): croniter expressions in a time zone, daylight saving, and what a tick
enqueues under each catch-up policy. No database: ``plan`` is given the server's clock.

The catch-up tests read that clock from freezegun. The DST nights step a clock of their own:
freezegun's datetime loses ``fold`` in fromtimestamp() and astimezone() (02:30:01 after the
fall-back comes back as 02:30:01 CEST), and croniter, which uses both, then repeats 02:30 CET
forever. Without freezegun both behave, and that is what runs in production."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest
from freezegun import freeze_time

from batchq.errors import ConfigError
from batchq.jobs.cron import ON_TIME_SECONDS, Cron, parse_cron, plan

BERLIN = ZoneInfo("Europe/Berlin")


def at(*args: int, tz: ZoneInfo = BERLIN, fold: int = 0) -> int:
    return int(datetime(*args, tzinfo=tz, fold=fold).timestamp())  # type: ignore[misc]


def local(cron: Cron, slot: int) -> str:
    return cron.local(slot).isoformat()


def slots_between(cron: Cron, start: int, end: int) -> list[str]:
    found, t = [], start
    while (t := cron.next_after(t)) <= end:
        found.append(local(cron, t))
    return found


def ticking(cron: Cron, catch_up: str, start: datetime, hours: float, every: float = 60) -> list[str]:
    """Tick every ``every`` seconds (plus a little) from ``start``: the slots enqueued, in order."""
    enqueued: list[str] = []
    now = start.timestamp()
    next_exec = cron.next_after(int(now))  # the schedule is created at start
    for _ in range(int(hours * 3600 / every)):
        now += every
        if next_exec <= now + 0.3:  # what the due query asks the server, cron's start-up later
            todo = plan(cron, catch_up, 100, next_exec, now + 0.3)
            enqueued += [local(cron, slot) for slot in todo.slots]
            next_exec = todo.next_exec
    return enqueued


# -- expressions ------------------------------------------------------------------------------


def test_five_fields_nicknames_and_seconds_first() -> None:
    utc = ZoneInfo("UTC")
    start = at(2024, 5, 6, 12, 0, 0, tz=utc)  # a Monday
    assert local(parse_cron("0 7 * * mon-fri", "UTC"), start) == "2024-05-06T12:00:00+00:00"
    assert slots_between(parse_cron("0 7 * * mon-fri"), start, start + 86400 * 7) == [
        f"2024-05-{day:02d}T07:00:00+00:00" for day in (7, 8, 9, 10, 13)
    ]
    assert slots_between(parse_cron("@hourly"), start, start + 7200) == [
        "2024-05-06T13:00:00+00:00",
        "2024-05-06T14:00:00+00:00",
    ]
    # Six fields: seconds first, as Quartz and Spring write them.
    assert slots_between(parse_cron("*/20 * * * * *"), start, start + 60) == [
        "2024-05-06T12:00:20+00:00",
        "2024-05-06T12:00:40+00:00",
        "2024-05-06T12:01:00+00:00",
    ]
    assert parse_cron("  0  7 * *   *  ").expr == "0 7 * * *"  # stored normalised


@pytest.mark.parametrize(
    ("expr", "tz", "message"),
    [
        ("0 7 * *", "UTC", "bad cron expression"),
        ("61 * * * *", "UTC", "bad cron expression"),
        ("@reboot", "UTC", "bad cron expression"),
        ("H * * * *", "UTC", "bad cron expression"),
        ("", "UTC", "bad cron expression"),
        (None, "UTC", "bad cron expression"),
        ("0 0 30 2 *", "UTC", "never fires"),
        ("0 7 * * *", "Mars/Olympus", "unknown time zone"),
        ("0 7 * * *", "../../etc/passwd", "unknown time zone"),
        ("0 7 * * *", "", "unknown time zone"),
    ],
)
def test_bad_expressions_and_time_zones_are_refused(expr: str, tz: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_cron(expr, tz)


def test_slots_follow_the_time_zone() -> None:
    cron = parse_cron("0 7 * * *", "Europe/Berlin")
    winter = cron.next_after(at(2024, 1, 10, 12))
    summer = cron.next_after(at(2024, 7, 10, 12))
    assert datetime.fromtimestamp(winter, timezone.utc).hour == 6
    assert datetime.fromtimestamp(summer, timezone.utc).hour == 5


# -- daylight saving --------------------------------------------------------------------------


def test_spring_forward_runs_a_skipped_time_once_after_the_gap() -> None:
    # 2024-03-31 in Berlin: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day.
    cron = parse_cron("30 2 * * *", "Europe/Berlin")
    assert slots_between(cron, at(2024, 3, 30, 12), at(2024, 4, 1, 12)) == [
        "2024-03-31T03:00:00+02:00",
        "2024-04-01T02:30:00+02:00",
    ]
    hourly = parse_cron("0 * * * *", "Europe/Berlin")
    night = slots_between(hourly, at(2024, 3, 31, 0, 30), at(2024, 3, 31, 4, 30))
    assert night == ["2024-03-31T01:00:00+01:00", "2024-03-31T03:00:00+02:00", "2024-03-31T04:00:00+02:00"]
    day = slots_between(hourly, at(2024, 3, 31, 0, 0) - 1, at(2024, 4, 1, 0, 0) - 1)
    assert len(day) == 23  # a 23-hour day: every real hour once


def test_fall_back_runs_a_repeated_time_once_but_every_real_hour() -> None:
    # 2024-10-27 in Berlin: 03:00 CEST falls back to 02:00 CET; 02:00-02:59 happen twice.
    cron = parse_cron("30 2 * * *", "Europe/Berlin")
    assert slots_between(cron, at(2024, 10, 25, 12), at(2024, 10, 28, 12)) == [
        "2024-10-26T02:30:00+02:00",
        "2024-10-27T02:30:00+02:00",  # the first 02:30 only
        "2024-10-28T02:30:00+01:00",
    ]
    hourly = parse_cron("0 * * * *", "Europe/Berlin")
    night = slots_between(hourly, at(2024, 10, 27, 1, 30), at(2024, 10, 27, 3, 30))
    assert night == ["2024-10-27T02:00:00+02:00", "2024-10-27T02:00:00+01:00", "2024-10-27T03:00:00+01:00"]
    day = slots_between(hourly, at(2024, 10, 27, 0, 0) - 1, at(2024, 10, 28, 0, 0) - 1)
    assert len(day) == 25  # a 25-hour day: every real hour once
    two_hourly = parse_cron("0 */2 * * *", "Europe/Berlin")  # fixed hours: 02:00 once
    assert slots_between(two_hourly, at(2024, 10, 27, 1), at(2024, 10, 27, 5)) == [
        "2024-10-27T02:00:00+02:00",
        "2024-10-27T04:00:00+01:00",
    ]


def test_latest_slot_agrees_with_the_next_across_dst() -> None:
    """plan() looks back with latest_at_or_before, forward with next_after: the same slots."""
    for expr in ("30 2 * * *", "0 * * * *", "*/15 * * * *", "0 */2 * * *", "15,45 1-3 * * *"):
        cron = parse_cron(expr, "Europe/Berlin")
        for start in (at(2024, 3, 30, 12), at(2024, 10, 26, 12)):
            forward = [cron.next_after(start)]
            while forward[-1] < start + 2 * 86400:
                forward.append(cron.next_after(forward[-1]))
            backward = [forward[-1]]
            while backward[-1] > forward[0]:
                previous = cron.latest_at_or_before(backward[-1] - 1)
                assert previous is not None
                backward.append(previous)
            assert backward[::-1] == forward, expr


@pytest.mark.parametrize(
    ("start", "expr", "expected"),
    [
        # Spring forward, ticking every minute through the night.
        (
            datetime(2024, 3, 30, 23, 0, tzinfo=BERLIN),
            "30 2 * * *",
            ["2024-03-31T03:00:00+02:00"],
        ),
        (
            datetime(2024, 3, 31, 0, 30, tzinfo=BERLIN),
            "0 * * * *",
            # Four real hours from 00:30 CET end at 05:30 CEST: no 02:00, nothing skipped.
            [
                "2024-03-31T01:00:00+01:00",
                "2024-03-31T03:00:00+02:00",
                "2024-03-31T04:00:00+02:00",
                "2024-03-31T05:00:00+02:00",
            ],
        ),
        # Fall back.
        (
            datetime(2024, 10, 26, 23, 0, tzinfo=BERLIN),
            "30 2 * * *",
            ["2024-10-27T02:30:00+02:00"],
        ),
        (
            datetime(2024, 10, 27, 0, 30, tzinfo=BERLIN),
            "0 * * * *",
            [
                "2024-10-27T01:00:00+02:00",
                "2024-10-27T02:00:00+02:00",
                "2024-10-27T02:00:00+01:00",
                "2024-10-27T03:00:00+01:00",
            ],
        ),
    ],
)
@pytest.mark.parametrize("catch_up", ["latest", "all", "none"])
def test_ticking_through_a_dst_night(start: datetime, expr: str, expected: list[str], catch_up: str) -> None:
    """A tick a minute on a fake clock: each slot enqueued once, none skipped, whatever the policy
    (a tick a minute is on time for every one)."""
    hours = 4.0 if expr.startswith("0 *") else 5.0
    assert ticking(parse_cron(expr, "Europe/Berlin"), catch_up, start, hours) == expected


# -- catch-up policies ------------------------------------------------------------------------


def _outage(catch_up: str, limit: int = 100) -> tuple[list[str], str]:
    """An hourly schedule due at 01:00 UTC, first ticked at 05:20 (four slots missed)."""
    cron = parse_cron("0 * * * *", "UTC")
    utc = ZoneInfo("UTC")
    with freeze_time("2024-05-06 05:20:00"):
        todo = plan(cron, catch_up, limit, at(2024, 5, 6, 1, 0, tz=utc), time.time())
    return [local(cron, s)[11:16] for s in todo.slots], local(cron, todo.next_exec)[11:16]


def test_catch_up_latest_enqueues_the_latest_missed_slot() -> None:
    assert _outage("latest") == (["05:00"], "06:00")


def test_catch_up_all_enqueues_every_missed_slot_up_to_the_limit() -> None:
    assert _outage("all") == (["01:00", "02:00", "03:00", "04:00", "05:00"], "06:00")
    assert _outage("all", limit=2) == (["04:00", "05:00"], "06:00")  # the latest ones


def test_catch_up_none_skips_missed_slots_but_runs_one_on_time() -> None:
    assert _outage("none") == ([], "06:00")
    cron = parse_cron("0 * * * *", "UTC")
    due = at(2024, 5, 6, 5, 0, tz=ZoneInfo("UTC"))
    assert plan(cron, "none", 100, due, due + ON_TIME_SECONDS).slots == [due]  # seen in time
    assert plan(cron, "none", 100, due, due + ON_TIME_SECONDS + 1).slots == []


def test_a_slot_is_due_at_its_second() -> None:
    cron = parse_cron("* * * * * *", "UTC")
    seen = at(2024, 5, 6, 5, 0, 0, tz=ZoneInfo("UTC"))
    assert plan(cron, "all", 100, seen, seen + 0.999) == plan(cron, "all", 100, seen, seen)
    assert plan(cron, "all", 100, seen, seen).slots == [seen]
    assert plan(cron, "all", 100, seen, seen).next_exec == seen + 1
    assert plan(cron, "all", 100, seen, seen + 2.5).slots == [seen, seen + 1, seen + 2]
