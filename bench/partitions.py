"""Partitioned claims against row claims on MariaDB where SKIP LOCKED is turned off (issue 10).

    .venv/bin/python bench/partitions.py --backend mysql --jobs 10000 --procs 4 --repeat 2

Each repetition drains --jobs no-op jobs, loaded untimed into an emptied batchq_job, with
--procs `batchq run` processes started at once (jobs/s = jobs / wall seconds from the first
spawn to the last exit), three ways, interleaved:
  SKIP LOCKED        row claims as the server offers them (the default);
  FOR UPDATE         row claims with the URL's skip_locked=off: claimers wait for each other, as
                     on MySQL < 8.0.1 and MariaDB < 10.6;
  partition          skip_locked=off and `run --claim partition` over --partitions partitions
                     (jobs spread over them at load, as enqueue spreads them at random).
The row claims run without the partition index (`batchq partitions set 0`), as deployed.
"""

from __future__ import annotations

from batchq import Queue

from floors import floor_for
from loads import bulk_load, count_jobs, reset
from machine import server_info
from options import parse, parser
from procs import compile_batchq, run_procs
from report import command_line, emit, table
from settings import BATCHQ, bench_env, url_for
from stats import med_range, median, ratio

MODES = ("SKIP LOCKED", "FOR UPDATE", "partition")


def mode_url(backend: str, mode: str) -> str:
    url = url_for(backend)
    extra = "sslmode=disable" + ("" if mode == "SKIP LOCKED" else "&skip_locked=off")
    return url + ("&" if "?" in url else "?") + extra


def drain(backend: str, mode: str, jobs: int, procs: int, partitions: int) -> float:
    reset(backend)
    queue = Queue(url_for(backend))
    queue.set_partitions(partitions if mode == "partition" else 0)
    queue.close()
    bulk_load(backend, jobs)
    if mode == "partition":  # as enqueue would have placed them
        floor = floor_for(backend)
        floor.execute(f"UPDATE batchq_job SET claim_partition = id % {int(partitions)}")
        floor.close()
    cmd = [BATCHQ, "run", "--max-procs-per-host", str(procs)]
    if mode == "partition":
        cmd += ["--claim", "partition"]
    wall = run_procs([cmd] * procs, bench_env(backend, BATCHQ_URL=mode_url(backend, mode)))
    left = count_jobs(backend)
    if left:
        raise RuntimeError(f"{mode}: {left} jobs left")
    return jobs / wall


def main() -> None:
    ap = parser(__doc__, repeat=2, jobs=10_000, procs="4")
    ap.add_argument("--partitions", type=int, default=16, help="partitions (default %(default)s)")
    args = parse(ap)
    compile_batchq()
    rates: dict[tuple[int, str], list[float]] = {}
    for _ in range(args.repeat):
        for procs in args.procs:
            for mode in MODES:
                rate = drain(args.backend, mode, args.jobs, procs, args.partitions)
                rates.setdefault((procs, mode), []).append(rate)
                print(f"{procs} procs, {mode}: {rate:,.0f} jobs/s", flush=True)
    rows = []
    for procs in args.procs:
        base = median(rates[(procs, "FOR UPDATE")])
        skip = median(rates[(procs, "SKIP LOCKED")])
        for mode in MODES:
            got = rates[(procs, mode)]
            rows.append([procs, mode, med_range(got), ratio(median(got), base), ratio(median(got), skip)])
    header = ["processes", "claims", "jobs/s (median, range)", "vs FOR UPDATE", "vs SKIP LOCKED"]
    info = ", ".join(f"{k} {v}" for k, v in server_info(args.backend).items())
    text = table(header, rows) + f"\n\n{command_line()}\n\n{info}"
    emit(f"Partitioned claims, {args.backend}, {args.jobs:,} jobs", text, "partitions")


if __name__ == "__main__":
    main()
