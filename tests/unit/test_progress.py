"""batchq.progress(): what it accepts, what it stores, and the throttle (batchq.jobs.reporting)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

import batchq
from batchq import ConfigError
from batchq.core.stored import stored_fraction
from batchq.jobs.reporting import REPORTS_KEPT, Report, Tracker, checked_report, tracking


@pytest.mark.parametrize("fraction", [0, 0.0, 1, 1.0, 0.5, Fraction(1, 3), 5e-324])
def test_fractions_from_0_to_1_are_taken(fraction: Any) -> None:
    assert checked_report(fraction, "").fraction == float(fraction)


@pytest.mark.parametrize(
    "fraction",
    [-0.01, 1.0000001, 5, -1, math.nan, math.inf, -math.inf, True, False, "0.5", None]
    + [pytest.param(10**400, id="10**400"), pytest.param(Fraction(10**400, 1), id="Fraction(10**400)")],
)
def test_anything_else_is_refused_with_a_clear_error(fraction: Any) -> None:
    with pytest.raises(ConfigError, match="bad progress .*: use a number from 0 to 1"):
        batchq.progress(fraction)  # outside a worker too: a unit test of a task sees the mistake


@pytest.mark.parametrize("message", [None, 5, b"bytes", ["a"]])
def test_a_message_that_is_no_string_is_refused(message: Any) -> None:
    with pytest.raises(ConfigError, match="bad progress message"):
        batchq.progress(0.5, message)


def test_a_message_is_cut_to_200_printable_characters() -> None:
    assert checked_report(0.5, "x" * 1_000_000).message == "x" * 200
    assert checked_report(0.5, "a\x00b\nc\td\x1b[31me\u2028f").message == "a b c d [31me f"
    assert checked_report(0.5, "lone \udc80 surrogate").message == "lone   surrogate"
    assert checked_report(0.5, "émojis 🎉 stay").message == "émojis 🎉 stay"


def test_outside_a_worker_a_report_goes_nowhere() -> None:
    assert batchq.progress(0.5, "fine") is None


def test_stored_fraction_reads_what_a_row_may_hold() -> None:
    assert [stored_fraction(v) for v in (0.25, 1, 0, None, 5.0, -1, math.nan, "0.5", b"x", True)] == [
        0.25,
        1.0,
        0.0,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
    ]


class Writes:
    """A tracker's writer: notes what it was given; answers False (taken back) when told to."""

    def __init__(self, matches: bool = True) -> None:
        self.written: list[Report] = []
        self.matches = matches

    def __call__(self, report: Report) -> bool:
        self.written.append(report)
        return self.matches


def _report(tracker: Tracker, fraction: float, message: str = "") -> None:
    with tracking(tracker):
        batchq.progress(fraction, message)


def test_within_the_interval_the_first_report_is_written_and_the_rest_held() -> None:
    writes = Writes()
    tracker = Tracker(writes, interval=3600)
    for step in range(1, 101):
        _report(tracker, step / 100, f"step {step}")
    assert writes.written == [Report(0.01, "step 1")]
    assert tracker.held == Report(1.0, "step 100")
    assert len(tracker.reports) == 100


def test_a_failed_try_writes_the_held_report_as_it_ends() -> None:
    writes = Writes()
    tracker = Tracker(writes, interval=3600)
    _report(tracker, 0.1)
    _report(tracker, 0.2)
    tracker.end(failed=True)
    assert writes.written == [Report(0.1, ""), Report(0.2, "")]


def test_a_succeeded_try_drops_the_held_report() -> None:
    writes = Writes()
    tracker = Tracker(writes, interval=3600)
    _report(tracker, 0.1)
    _report(tracker, 0.2)
    tracker.end(failed=False)
    assert writes.written == [Report(0.1, "")]


def test_a_report_equal_to_the_last_written_writes_nothing() -> None:
    writes = Writes()
    tracker = Tracker(writes, interval=0)
    for _ in range(3):
        _report(tracker, 0.5, "same")
    tracker.end(failed=True)
    assert writes.written == [Report(0.5, "same")]


def test_past_the_interval_every_change_is_written() -> None:
    writes = Writes()
    tracker = Tracker(writes, interval=0)
    _report(tracker, 0.1)
    _report(tracker, 0.2)
    assert writes.written == [Report(0.1, ""), Report(0.2, "")]


def test_once_a_write_matches_nothing_no_more_are_tried() -> None:
    writes = Writes(matches=False)
    tracker = Tracker(writes, interval=0)
    _report(tracker, 0.1)
    _report(tracker, 0.2)
    tracker.end(failed=True)
    assert writes.written == [Report(0.1, "")]


def test_after_the_call_ended_a_report_is_dropped() -> None:
    writes = Writes()
    tracker = Tracker(writes, interval=0)
    tracker.end(failed=False)
    _report(tracker, 0.3)
    assert writes.written == [] and not tracker.reports


def test_memory_keeps_the_latest_reports_only() -> None:
    tracker = Tracker(None)
    for step in range(REPORTS_KEPT + 10):
        _report(tracker, 0.5, str(step))
    assert len(tracker.reports) == REPORTS_KEPT
    assert tracker.reports[-1].message == str(REPORTS_KEPT + 9)
