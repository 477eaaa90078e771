"""A process contending for a lock or semaphore, for the acceptance tests.

`python lock_contender.py URL NAME LIMIT ROUNDS HOLD_SECONDS OUT`: ROUNDS times, acquire NAME
(a lock when LIMIT is 1, else a semaphore of LIMIT), hold it HOLD_SECONDS with one renewal
halfway, release it; append one JSON line per holding to OUT: its slot, token, and the
monotonic times (one clock for every process of the host) just after acquire returned and
just before release was called, so the recorded interval lies inside the real holding.

`python lock_contender.py URL NAME 1 hold TTL MARKER`: acquire NAME with that ttl, write
MARKER, then sleep until killed (the SIGKILL test).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from batchq import Lock, Queue


def contend(queue: Queue, name: str, limit: int, rounds: int, hold: float, out: Path) -> None:
    lock: Lock = queue.lock(name, ttl="30s") if limit == 1 else queue.semaphore(name, limit, ttl="30s")
    with out.open("a") as log:
        for _ in range(rounds):
            got = lock.acquire(wait="60s")
            assert got, f"not acquired in 60s: {got}"
            start = time.monotonic()
            time.sleep(hold / 2)
            assert lock.renew()
            time.sleep(hold / 2)
            end = time.monotonic()
            assert lock.release()
            log.write(json.dumps({"slot": got.slot, "token": got.token, "start": start, "end": end}) + "\n")


def hold_until_killed(queue: Queue, name: str, ttl: str, marker: Path) -> None:
    lock = queue.lock(name, ttl=ttl)
    assert lock.acquire()
    marker.write_text(lock.owner)
    while True:
        time.sleep(60)


def main() -> None:
    url, name, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    queue = Queue(url)
    if sys.argv[4] == "hold":
        hold_until_killed(queue, name, sys.argv[5], Path(sys.argv[6]))
    else:
        contend(queue, name, limit, int(sys.argv[4]), float(sys.argv[5]), Path(sys.argv[6]))


if __name__ == "__main__":
    main()
