"""A host ticking in a loop, for the scheduler's acceptance tests: `python ticker.py SECONDS`.

Ticks every 20-120 ms (BATCHQ_URL, BATCHQ_TASK_MODULES from the environment) until SECONDS have
passed, then prints how many jobs it enqueued and how many due slots another ticker took first.
"""

from __future__ import annotations

import random
import sys
import time

from batchq import Queue


def main() -> None:
    deadline = time.monotonic() + float(sys.argv[1])
    queue = Queue()
    enqueued = taken = 0
    while time.monotonic() < deadline:
        report = queue.tick()
        enqueued += len(report.enqueued)
        taken += report.taken
        for name, why in report.failed:
            print(f"schedule {name}: {why}", file=sys.stderr, flush=True)
        time.sleep(random.uniform(0.02, 0.12))
    print(enqueued, taken, flush=True)


if __name__ == "__main__":
    main()
