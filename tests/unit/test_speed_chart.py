"""docs/speed-vs-plain.svg is drawn from the table of record in docs/speed.md
(scripts/speed_chart.py), so the picture says what the figures say."""

from __future__ import annotations

from scripts import speed_chart


def test_the_chart_is_drawn_from_the_table() -> None:
    assert speed_chart.CHART.read_text("utf-8") == speed_chart.render(), "run scripts/speed_chart.py"


def test_every_throughput_row_is_drawn_with_one_bar_per_backend() -> None:
    backends, rows = speed_chart.rows(speed_chart.PAGE.read_text("utf-8"))
    assert backends == ["MariaDB", "PostgreSQL", "SQLite"]
    labels = [row.label for row in rows]
    assert "batchq run --batch 100, 1 process" in labels and "batchq run --batch 100, 4 processes" in labels
    assert "enqueue()" in labels
    assert all(len(row.ratios) == 3 and all(r > 0 for r in row.ratios) for row in rows)


def test_a_row_of_two_ratios_is_split_and_a_row_without_ratios_left_out() -> None:
    page = (
        f"{speed_chart.HEADER} A | B |\n|---|---|---|\n"
        "| `run --batch 100`, 1 / 4 processes | 9 / 8 (0.50× / 0.80×) | 1 / 2 (1.10× / 1.20×) |\n"
        "| a drain after many jobs | 0.89× | 1.29× (autovacuum off) |\n"
        "| `enqueue()` | 5 (0.75×) | 6 (0.64×) |\n\nafter\n"
    )
    backends, rows = speed_chart.rows(page)
    assert backends == ["A", "B"]
    assert rows == [
        speed_chart.Row("run --batch 100, 1 process", (0.5, 1.1)),
        speed_chart.Row("run --batch 100, 4 processes", (0.8, 1.2)),
        speed_chart.Row("enqueue()", (0.75, 0.64)),
    ]


def test_labels_are_escaped() -> None:
    drawn = speed_chart.svg(["<b>"], [speed_chart.Row("a & <script>", (1.0,))])
    assert "<script>" not in drawn and "&lt;script&gt;" in drawn and "&lt;b&gt;" in drawn
