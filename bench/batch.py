"""Batch claims: the raw-SQL floor for claiming N jobs per transaction, and `batchq run --batch N`.

    .venv/bin/python bench/batch.py --backend mysql --jobs 20000 --batch 100 --procs 1,2,4 --repeat 3
    (--backend mysql|sqlite|postgresql)

Floor (bench/floor_worker.py --mode batch): per transaction, batchq's batch claim
statements: MySQL/MariaDB the claim SELECT with LIMIT N FOR UPDATE SKIP LOCKED and one
UPDATE ... WHERE id IN (...); SQLite the claim UPDATE with `id IN (SELECT ... LIMIT N)`;
PostgreSQL one statement in autocommit, UPDATE ... WHERE id IN (SELECT ... LIMIT N FOR
UPDATE SKIP LOCKED) RETURNING (claim_batch). Then the no-op for each job, then one DELETE
of the whole batch fenced by its claim token (job_delete_batch: `id IN (...)`, on
PostgreSQL `id = ANY(array)`). The one-row-per-transaction floor is run beside it for scale.
batchq: K x `batchq run --batch N`, which claims and deletes with the same statements.
"""

from __future__ import annotations

import sys

from machine import server_info
from options import parse, parser
from process import drain_batchq, drain_floor
from procs import compile_batchq
from report import command_line, emit, table
from stats import med_range, median, ratio


def main() -> None:
    ap = parser(
        __doc__,
        jobs=20000,
        jobs_help="jobs per batch-floor and batchq drain",
        procs="1,2,4",
        batch=100,
        quick={"jobs": 5000, "single_jobs": 1000, "repeat": 1},
    )
    ap.add_argument(
        "--single-jobs",
        type=int,
        default=None,
        help="jobs for the one-row-per-transaction reference (default: --jobs)",
    )
    args = parse(ap)
    compile_batchq()
    single_jobs = args.single_jobs or args.jobs
    procs_list = args.procs
    rates: dict[tuple[str, int], list[float]] = {}
    for rep in range(args.repeat):
        for procs in procs_list:
            w = drain_floor(args.backend, args.jobs, procs, mode="batch", batch=args.batch)
            rates.setdefault(("batch", procs), []).append(args.jobs / w)
            wb = drain_batchq(args.backend, args.jobs, procs, ["--batch", str(args.batch)])
            rates.setdefault(("batchq", procs), []).append(args.jobs / wb)
            w1 = drain_floor(args.backend, single_jobs, procs, mode="single")
            rates.setdefault(("single", procs), []).append(single_jobs / w1)
            print(
                f"# rep {rep + 1} procs {procs}: batch {args.jobs / w:,.0f} jobs/s, "
                f"single {single_jobs / w1:,.0f} jobs/s",
                file=sys.stderr,
                flush=True,
            )
    rows = []
    for procs in procs_list:
        b = median(rates[("batch", procs)])
        rows.append(
            [
                procs,
                f"raw-SQL floor, claim {args.batch} per transaction + one DELETE per batch",
                med_range(rates[("batch", procs)]),
                "1.00×",
            ]
        )
        rows.append(
            [
                procs,
                "raw-SQL floor, one row per transaction (reference)",
                med_range(rates[("single", procs)]),
                ratio(median(rates[("single", procs)]), b),
            ]
        )
        rows.append(
            [
                procs,
                f"`batchq run --batch {args.batch}`",
                med_range(rates[("batchq", procs)]),
                ratio(median(rates[("batchq", procs)]), b),
            ]
        )
    info = server_info(args.backend)
    text = table(["procs", "system", "jobs/s median (min–max)", "of batch floor"], rows)
    text += (
        f"\n\n{args.jobs:,} jobs per batch-floor drain, {single_jobs:,} per one-row drain, {args.repeat} "
        "repetitions; jobs/s = jobs / wall seconds from spawning the workers to the last exit; "
        + ", ".join(f"{k}={v}" for k, v in info.items())
        + f".\nCommand: {command_line()}"
    )
    emit(f"batch claims: {args.backend}", text, f"batch-{args.backend}")


if __name__ == "__main__":
    main()
