"""Processes for the bounded job queue test: producers and a checker on one queue.

Usage: python bounded_jobs.py ROLE URL QUEUE ARG
  producer URL QUEUE "FIRST COUNT DIR"  enqueue jobs:record {"n": FIRST..FIRST+COUNT-1, "sleep": ...,
                                    "gate": DIR/gate} one by one; on QueueFull (overflow="reject")
                                    touch DIR/rejected, wait a little and enqueue it again.
                                    Prints {"rejected": k}.
  checker  URL QUEUE STOPFILE       sample the queue's waiting jobs (one statement: stats())
                                    until STOPFILE exists. Prints {"max": m, "samples": s}.
Each prints "ready" once connected and waits for a line on stdin, so that all start at once.
"""

from __future__ import annotations

import json
import os
import sys
import time

from batchq import Queue, QueueFull


def produce(queue: Queue, name: str, arg: str) -> object:
    first, count, folder = arg.split()
    gate = os.path.join(folder, "gate")
    rejected = 0
    for n in range(int(first), int(first) + int(count)):
        while True:
            try:
                queue.enqueue("jobs:record", {"n": n, "sleep": 0.005, "gate": gate}, queue=name)
                break
            except QueueFull:
                rejected += 1
                open(os.path.join(folder, "rejected"), "a").close()
                time.sleep(0.005)
    return {"rejected": rejected}


def check(queue: Queue, name: str, stopfile: str) -> object:
    highest, samples = 0, 0
    while not os.path.exists(stopfile):
        waiting = sum(s.ready + s.delayed + s.blocked for s in queue.stats() if s.queue == name)
        highest, samples = max(highest, waiting), samples + 1
    return {"max": highest, "samples": samples}


def main(role: str, url: str, name: str, arg: str) -> None:
    queue = Queue(url, task_modules=["jobs"])
    queue.backend.conn  # noqa: B018 - connect before the start line
    print("ready", flush=True)
    sys.stdin.readline()
    result = (produce if role == "producer" else check)(queue, name, arg)
    queue.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
