"""A raw-SQL worker: the floor of `batchq run`. Drains the queue, then exits.

Every cycle runs batchq's own statements on the bare driver (floors.py): jobs_claim (MySQL: one
multi-statement query, then jobs_claim_mark; PostgreSQL: one statement; SQLite: BEGIN IMMEDIATE,
jobs_delete, jobs_claim, COMMIT), up to --batch jobs per claim, the no-op for each.
fused:  batchq run's cycle: the finished jobs are deleted by the next claim, one commit per claim.
single: the finished jobs are deleted by a jobs_delete of their own in autocommit before the
        next claim: two commits per claim.
batch:  fused, --batch jobs per claim (`batchq run --batch N`).

    python bench/floor_worker.py --backend mysql --mode fused     (or sqlite, postgresql)
"""

from __future__ import annotations

import os
import socket

from floors import floor_for
from noop_jobs import noop
from options import parse, parser


def main() -> None:
    ap = parser(__doc__, repeat=None, batch=100)
    ap.add_argument("--mode", choices=("single", "fused", "batch"), default="single")
    args = parse(ap)
    floor = floor_for(args.backend)
    worker = f"{socket.gethostname()}:{os.getpid()}"
    limit = args.batch if args.mode == "batch" else 1
    floor.drain(worker, noop, limit, fused=args.mode != "single")
    floor.close()


if __name__ == "__main__":
    main()
