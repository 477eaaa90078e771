"""A raw-SQL worker: the floor of `batchq run`. Drains the queue, then exits.

single: claim one job per short transaction (batchq's claim statements), call the no-op,
        ack with one DELETE (job_delete) - exactly batchq's cycle, no library around it.
batch:  claim up to N jobs per transaction (SKIP LOCKED on MySQL/MariaDB), call each no-op,
        ack them with one DELETE ... WHERE id IN (...).

    python bench/floor_worker.py --backend mysql --mode single
"""

from __future__ import annotations

import argparse
import os
import socket

from common import BACKENDS, floor_for
from noop_jobs import noop


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=BACKENDS, required=True)
    ap.add_argument("--mode", choices=("single", "batch"), default="single")
    ap.add_argument("--batch", type=int, default=100)
    args = ap.parse_args()
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
