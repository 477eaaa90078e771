"""Summaries of repeated measurements: percentiles, medians, ranges, ratios."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def med_range(values: Sequence[float], fmt: str = "{:,.0f}") -> str:
    """'median (min–max)', or the one value, or 'n/a'."""
    if not values:
        return "n/a"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b and b == b and a == a else "n/a"
