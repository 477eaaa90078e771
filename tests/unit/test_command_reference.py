"""The command reference (docs/reference/cli.md) is what scripts/command_reference.py renders from the click
commands: an option added, renamed or removed without re-rendering it fails here."""

from __future__ import annotations

import difflib

from batchq.ops.metrics import STATES
from scripts.command_reference import PAGE, render, render_page
from tests.support.processes import ROOT


def test_command_reference_is_rendered_from_the_commands() -> None:
    text = PAGE.read_text(encoding="utf-8")
    wanted = render_page(text)
    diff = "\n".join(
        difflib.unified_diff(text.splitlines(), wanted.splitlines(), "docs/reference/cli.md", "rendered", n=0)
    )
    assert wanted == text, f"run `.venv/bin/python scripts/command_reference.py`:\n{diff}"


def test_every_command_and_option_is_in_the_reference() -> None:
    table = render()
    for needle in ("`batchq run ", "[--tick]", "`batchq enqueue TASK [PAYLOAD] ", "[--task-modules M1,M2]"):
        assert needle in table
    assert "`batchq locks release NAME [--force]`" in table
    assert "`batchq mq prune --older-than DURATION [--queue QUEUE] [--batch N]`" in table
    assert "[--failed \\| --succeeded]" in table  # one value, two flags


def test_metrics_page_names_every_state_of_batchq_jobs() -> None:
    [row] = [
        line
        for line in (ROOT / "docs" / "operations" / "metrics.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| `batchq_jobs` |")
    ]
    assert row.count("` / `") == len(STATES) - 1 and all(f"`{state}`" in row for state in STATES), row
