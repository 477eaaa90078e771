"""The no-op job every benchmark runs (BATCHQ_TASK_MODULES=noop_jobs, PYTHONPATH=bench)."""

import os
import time


def noop(payload=None):
    pass


def stamp(payload=None):
    """For latency.py: append 'enqueued_at started_at' (time.time()) to $BENCH_STAMP_FILE."""
    started = time.time()
    with open(os.environ["BENCH_STAMP_FILE"], "a") as out:
        out.write(f"{payload['t']} {started}\n")
