"""An enqueuer process for the contention test: `python enqueuer.py URL FIRST COUNT`.

Enqueues jobs:record for n in [FIRST, FIRST+COUNT) one by one and prints the
number of lock conflicts batchq retried for it. Any error reaching it fails it.
"""

import sys

from batchq import Queue

url, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
queue = Queue(url, task_modules=["jobs"])
for n in range(first, first + count):
    queue.enqueue("jobs:record", {"n": n})
print(queue.backend.transient_retries)
