"""The command-line options the benchmark scripts share.

    ap = parser(__doc__, jobs=20000, procs="1,2,4", quick={"jobs": 2000, "repeat": 1})
    ap.add_argument(...)          # the script's own options
    args = parse(ap)              # --quick applied

Every parser has --backend (required). The others are added when given a default:
--repeat (3 unless None), --jobs, --procs (a list, from "1,2,4"), --batch, --no-peers, and
--quick, whose overrides replace the values given on the command line, whatever their order.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from settings import BACKENDS


def ints(text: str) -> list[int]:
    """'1,2,4' -> [1, 2, 4]: an argparse type."""
    return [int(part) for part in text.split(",")]


def floats(text: str) -> list[float]:
    """'1,0.1' -> [1.0, 0.1]: an argparse type."""
    return [float(part) for part in text.split(",")]


def parser(
    doc: str | None,
    *,
    repeat: int | None = 3,
    jobs: int | None = None,
    jobs_help: str = "no-op jobs per run",
    procs: str | None = None,
    batch: int | None = None,
    peers: bool = False,
    quick: Mapping[str, Any] | None = None,
) -> argparse.ArgumentParser:
    """An ArgumentParser with the shared options; ``doc`` (the script's docstring) as its help."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=BACKENDS, required=True)
    if repeat is not None:
        ap.add_argument("--repeat", type=int, default=repeat, help="repetitions (default %(default)s)")
    if jobs is not None:
        ap.add_argument("--jobs", type=int, default=jobs, help=f"{jobs_help} (default %(default)s)")
    if procs is not None:
        ap.add_argument(
            "--procs", type=ints, default=procs, help="worker processes, e.g. 1,2,4 (default %(default)s)"
        )
    if batch is not None:
        ap.add_argument(
            "--batch", type=int, default=batch, help="jobs claimed per transaction (default %(default)s)"
        )
    if peers:
        ap.add_argument("--no-peers", action="store_true", help="skip huey (and procrastinate, pgqueuer)")
    if quick:
        shown = " ".join(f"--{name.replace('_', '-')} {value}" for name, value in quick.items())
        ap.add_argument("--quick", action="store_const", const=dict(quick), help=f"a smoke run: {shown}")
    return ap


def parse(ap: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line, then apply --quick's overrides."""
    args = ap.parse_args(argv)
    for name, value in (getattr(args, "quick", None) or {}).items():
        setattr(args, name, value)
    return args
