"""`batchq run` from this checkout against another, alternating: did a change move the drain?

    .venv/bin/python bench/run_ab.py --backend postgresql --checkout /tmp/before --jobs 20000 --repeat 4

Each repetition loads --jobs no-op jobs and drains them with one `python -m batchq run --batch N`
process from each checkout in turn (which goes first alternates), started in that checkout so
that its own batchq is the one imported (`git worktree add /tmp/before <commit>` makes one). For
a ratio that moved between two tables of record, this tells the code from the machine.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from loads import bulk_load, count_jobs, reset
from options import parse, parser
from report import command_line, emit, table
from settings import PYTHON, REPO_DIR, bench_env
from stats import med_range, median, ratio


def drain(backend: str, checkout: Path, jobs: int, batch: int) -> float:
    """jobs/s of one `batchq run` process of ``checkout`` on a fresh load."""
    reset(backend)
    bulk_load(backend, jobs)
    t0 = time.perf_counter()
    cmd = [PYTHON, "-m", "batchq", "run", "--batch", str(batch)]
    subprocess.run(cmd, env=bench_env(backend), cwd=checkout, check=True)
    wall = time.perf_counter() - t0
    left = count_jobs(backend)
    if left:
        raise RuntimeError(f"batchq run in {checkout} left {left} jobs")
    return jobs / wall


def main() -> None:
    ap = parser(__doc__, jobs=20000, batch=1, quick={"jobs": 2000, "repeat": 1})
    ap.add_argument("--checkout", type=Path, required=True, help="the other checkout (a git worktree)")
    args = parse(ap)
    sides = {"this checkout": REPO_DIR, str(args.checkout): args.checkout}
    rates: dict[str, list[float]] = {name: [] for name in sides}
    for rep in range(args.repeat):
        order = list(sides) if rep % 2 == 0 else list(reversed(sides))
        for name in order:
            rates[name].append(drain(args.backend, sides[name], args.jobs, args.batch))
    this, other = rates.values()
    rows = [[name, med_range(values)] for name, values in rates.items()]
    rows.append(["this / other", ratio(median(this), median(other))])
    header = [f"{args.backend}: `batchq run --batch {args.batch}`, 1 process", "jobs/s, median (min–max)"]
    emit(f"batchq run against another checkout, {args.backend}", f"{command_line()}\n\n{table(header, rows)}")


if __name__ == "__main__":
    main()
