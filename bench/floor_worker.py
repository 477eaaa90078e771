"""A raw-SQL worker: the floor of `batchq run`. Drains the queue, then exits.

single: claim one job per short transaction (batchq's claim statements), call the no-op,
        ack with one DELETE (job_delete) in autocommit: two commits per job. On PostgreSQL
        the claim is next_priority then the one claim UPDATE, each in autocommit (no BEGIN).
fused:  batchq run's cycle: claim, call the no-op, then DELETE it and claim the next in one
        transaction (job_delete, then the claim statements): one commit per job. On
        PostgreSQL: BEGIN; job_delete; next_priority; claim; COMMIT.
batch:  claim up to N jobs per transaction (SKIP LOCKED on MySQL/MariaDB and PostgreSQL),
        call each no-op, ack them with one DELETE ... WHERE id IN (...) (= ANY on PostgreSQL).

    python bench/floor_worker.py --backend mysql --mode single     (or sqlite, postgresql)
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
    done = 0
    if args.mode == "single":
        while True:
            token = os.urandom(16).hex()
            job = floor.claim(worker, token)
            if job is None:
                break
            noop(job[3])  # payload, as stored (the floor does not decode it)
            floor.ack(job[0], token)
            done += 1
    elif args.mode == "fused":
        done = floor.drain_fused(worker, noop)
    else:
        while True:
            token = os.urandom(16).hex()
            jobs = floor.claim_batch(args.batch, worker, token)
            if not jobs:
                break
            for job in jobs:
                noop(job[3])
            floor.ack_batch([job[0] for job in jobs], token)
            done += len(jobs)
    floor.close()


if __name__ == "__main__":
    main()
