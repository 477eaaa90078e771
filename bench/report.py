"""Result blocks: markdown tables, the command line that made them, printed and saved."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from settings import REPO_DIR, RESULTS_DIR


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def emit(title: str, text: str, name: str | None = None) -> None:
    """Print a result block; also save it under bench/results/ when a name is given."""
    block = f"### {title}\n\n{text}\n"
    print(block, flush=True)
    if name:
        RESULTS_DIR.mkdir(exist_ok=True)
        (RESULTS_DIR / f"{name}.md").write_text(block)


def command_line() -> str:
    """This run's command, paths relative to the repository, in backticks."""
    argv = [os.path.relpath(sys.executable, REPO_DIR)] + [
        os.path.relpath(a, REPO_DIR) if a.endswith(".py") and os.path.exists(a) else a for a in sys.argv
    ]
    return "`" + " ".join(argv) + "`"
