"""The charts page's drawings: line charts as SVG made here, on the server (no script, nothing
loaded from elsewhere). This module only computes coordinates and labels; the template writes
the SVG elements, and Jinja escapes every name in them.

A gap (a point nobody sampled) breaks a line; a point alone between gaps is drawn as a dot.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from ..core.config import format_duration
from ..ops.charts import Charts, Series

WIDTH, HEIGHT = 640, 180
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 10, 24  # room for the axes' labels
X_TICKS = 5
# Colour-blind-safe (Okabe-Ito), one per top queue; "other" is grey.
COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00", "#56b4e9", "#000000")
OTHER_COLOUR = "#8a8f99"


@dataclass(frozen=True)
class Line:
    name: str
    colour: str
    paths: list[str]  # each a run of points without a gap, as a polyline's points
    dots: list[tuple[float, float]]  # points alone between gaps


@dataclass(frozen=True)
class Tick:
    at: float  # x or y, in the drawing's coordinates
    label: str


@dataclass(frozen=True)
class Panel:
    key: str  # finished | failed | depth | oldest: element ids and the page's anchors
    title: str
    description: str  # what the figure shows, for a screen reader (the svg's desc)
    lines: list[Line]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    empty: bool  # no point at all in the range


@dataclass(frozen=True)
class Figure:
    """What one chart plots: a title, a value per line, and how its axis reads."""

    key: str
    title: str
    values: Callable[[Series], list[float | None]]
    label: Callable[[float], str]


def figures(step: int) -> list[Figure]:
    per = "per minute" if step == 1 else f"per minute (averaged over {step} minutes)"
    largest = "" if step == 1 else f" (the largest in {step} minutes)"
    return [
        Figure("finished", f"Jobs finished {per}", lambda s: s.finished, count_label),
        Figure("failed", f"Jobs failed {per}", lambda s: s.failed, count_label),
        Figure("depth", f"Queue depth: due jobs waiting{largest}", lambda s: s.depth, count_label),
        Figure("oldest", f"Oldest due job's wait{largest}", lambda s: s.oldest, age_label),
    ]


def panels(charts: Charts) -> list[Panel]:
    return [panel(charts, figure) for figure in figures(charts.step)]


def panel(charts: Charts, figure: Figure) -> Panel:
    points = charts.points
    known = [v for s in charts.series for v in figure.values(s) if v is not None]
    top = _nice_ceiling(max(known, default=0.0))
    lines = [
        Line(s.name, colour(i, s), *_trace(figure.values(s), points, top))
        for i, s in enumerate(charts.series)
    ]
    y_ticks = [Tick(_y(top * k / 2, top), figure.label(top * k / 2)) for k in range(3)]
    return Panel(
        figure.key,
        figure.title,
        _describe(charts, figure, known),
        lines,
        _x_ticks(charts),
        y_ticks,
        empty=not known,
    )


def colour(index: int, series: Series) -> str:
    return OTHER_COLOUR if series.queues > 1 else COLOURS[index % len(COLOURS)]


def _trace(
    values: list[float | None], points: int, top: float
) -> tuple[list[str], list[tuple[float, float]]]:
    """The polylines (runs without a gap) and lone dots of one line."""
    runs: list[list[tuple[float, float]]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            runs.append([])
        else:
            runs[-1].append((_x(i, points), _y(value, top)))
    paths = [" ".join(f"{x:.1f},{y:.1f}" for x, y in run) for run in runs if len(run) > 1]
    dots = [run[0] for run in runs if len(run) == 1]
    return paths, dots


def _x(point: int, points: int) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * (point / max(points - 1, 1))


def _y(value: float, top: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - min(value / top, 1.0))


def _nice_ceiling(value: float) -> float:
    """The axis's top: 1, 2 or 5 times a power of ten, at least the largest value (1 for none)."""
    if math.isinf(value):
        return sys.float_info.max
    if not value > 0:  # none, or NaN
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for factor in (1, 2, 5, 10):
        if value <= factor * power:
            return float(factor * power)
    return float(10 * power)


def _x_ticks(charts: Charts) -> list[Tick]:
    points = charts.points
    fmt = "%H:%M" if charts.range != "7d" else "%b %d"
    ticks = []
    for k in range(X_TICKS):
        point = round(k * (points - 1) / (X_TICKS - 1))
        minute = charts.first_minute + point * charts.step
        ticks.append(Tick(_x(point, points), _utc(minute).strftime(fmt)))
    return ticks


def _utc(minute: int) -> datetime:
    try:
        return datetime.fromtimestamp(minute * 60, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return datetime.fromtimestamp(0, tz=timezone.utc)


def _describe(charts: Charts, figure: Figure, known: list[float]) -> str:
    start, end = _utc(charts.first_minute), _utc(charts.now)
    span = f"from {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
    if not known:
        return f"{figure.title}, {span}: nothing sampled in this range."
    peaks = []
    for s in charts.series:
        values = [v for v in figure.values(s) if v is not None]
        if values:
            peaks.append(f"{s.name}: at most {figure.label(max(values))}")
    return f"{figure.title}, {span}. " + "; ".join(peaks) + "."


def count_label(value: float) -> str:
    if value >= 1e6:
        return f"{value:.3g}"
    return f"{value:g}" if value == int(value) else f"{value:.2f}".rstrip("0").rstrip(".")


def age_label(seconds: float) -> str:
    if seconds > 1e9:  # about 32 years: a row written by hand, shown as a number
        return f"{seconds:.3g} s"
    return "0" if seconds <= 0 else format_duration(seconds)
