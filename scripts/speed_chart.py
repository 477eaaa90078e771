"""Draw docs/speed-vs-plain.svg from the table of record in docs/speed.md, so the chart cannot
drift from the figures: one bar per backend for each throughput row, its ratio to the plain cycle,
with the plain cycle (1.0x) as a line.

`.venv/bin/python scripts/speed_chart.py` rewrites the picture; `--check` changes nothing and exits
1 when it differs (tests/unit/test_speed_chart.py runs the same comparison). To change the chart,
change the table, then run this. The rows drawn are those whose every cell gives its ratio as
`(0.75×)`, or `(0.58× / 0.81×)` for a row of two ("..., 1 / 4 processes").
"""

from __future__ import annotations

import re
import sys
from html import escape
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "speed.md"
CHART = ROOT / "docs" / "speed-vs-plain.svg"
HEADER = "| jobs/s (ratio to the plain cycle) |"
COLOURS = ("#1f77b4", "#2ca02c", "#ff7f0e")  # one per backend, in the table's column order

_RATIOS = re.compile(r"\(([\d.]+)×(?: / ([\d.]+)×)?\)")
_TWO_COUNTS = re.compile(r"^(?P<what>.*), (?P<one>\d+) / (?P<other>\d+) (?P<unit>\w+?)e?s$")

WIDTH, LABEL_W, BAR_H, GAP, TOP = 760, 300, 11, 12, 46
SCALE_MAX = 2.0  # ratios drawn up to 2.0x (a longer bar is cut and says so in its number)


class Row(NamedTuple):
    label: str
    ratios: tuple[float, ...]  # one per backend


def rows(page: str) -> tuple[list[str], list[Row]]:
    """The table's backends and its throughput rows, a row of two ratios split in two."""
    lines = page[page.index(HEADER) :].splitlines()
    backends = [cell.strip() for cell in lines[0].strip("|").split("|")[1:]]
    found: list[Row] = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        label, *cells = (cell.strip() for cell in line.strip("|").split("|"))
        matches = [_RATIOS.search(cell) for cell in cells]
        if not all(matches):
            continue
        pairs = [(float(m.group(1)), float(m.group(2) or m.group(1))) for m in matches if m]
        label = label.replace("`", "")
        two = _TWO_COUNTS.match(label)
        if two and any(m and m.group(2) for m in matches):
            for i, count in enumerate((two["one"], two["other"])):
                unit = two["unit"] if count == "1" else two["unit"] + "es"
                found.append(Row(f"{two['what']}, {count} {unit}", tuple(p[i] for p in pairs)))
        else:
            found.append(Row(label, tuple(p[0] for p in pairs)))
    return backends, found


def svg(backends: list[str], table: list[Row]) -> str:
    group_h = len(backends) * BAR_H + GAP
    height = TOP + len(table) * group_h + 20
    plot_w = WIDTH - LABEL_W - 60

    def x(ratio: float) -> float:
        return LABEL_W + plot_w * min(ratio, SCALE_MAX) / SCALE_MAX

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
    ]
    for i, backend in enumerate(backends):  # the legend
        lx = LABEL_W + i * 130
        out.append(f'<rect x="{lx}" y="8" width="12" height="12" fill="{COLOURS[i]}"/>')
        out.append(f'<text x="{lx + 16}" y="19">{escape(backend)}</text>')
    for tick in (0.5, 1.0, 1.5, 2.0):
        dash = "" if tick == 1.0 else ' stroke-dasharray="2,3"'
        colour = "#000" if tick == 1.0 else "#bbb"
        out.append(
            f'<line x1="{x(tick):.1f}" y1="{TOP - 8}" x2="{x(tick):.1f}" y2="{height - 16}" '
            f'stroke="{colour}"{dash}/>'
        )
        out.append(f'<text x="{x(tick):.1f}" y="{height - 4}" text-anchor="middle">{tick:.1f}×</text>')
    out.append(f'<text x="{x(1.0) + 4:.1f}" y="{TOP - 12}">the plain cycle</text>')
    for r, row in enumerate(table):
        y0 = TOP + r * group_h
        out.append(
            f'<text x="{LABEL_W - 8}" y="{y0 + group_h / 2:.1f}" text-anchor="end">{escape(row.label)}</text>'
        )
        for b, ratio in enumerate(row.ratios):
            y = y0 + b * BAR_H
            out.append(
                f'<rect x="{LABEL_W}" y="{y}" width="{x(ratio) - LABEL_W:.1f}" height="{BAR_H - 2}" '
                f'fill="{COLOURS[b]}"><title>{escape(backends[b])}: {ratio:.2f}×</title></rect>'
            )
            out.append(f'<text x="{x(ratio) + 3:.1f}" y="{y + BAR_H - 3}" font-size="10">{ratio:.2f}×</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render() -> str:
    return svg(*rows(PAGE.read_text("utf-8")))


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        if not CHART.is_file() or CHART.read_text("utf-8") != render():
            print(f"{CHART.relative_to(ROOT)} is not drawn from the table: run scripts/speed_chart.py")
            return 1
        return 0
    CHART.write_text(render(), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
