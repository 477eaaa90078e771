"""One of several processes enqueueing the same unique key at once:
`python unique_enqueuer.py URL KEY READY_FILE GO_FILE`.

Connects, writes READY_FILE, waits for GO_FILE (so that every process enqueues at the same moment),
enqueues jobs:noop with unique key KEY, and prints the id it got and whether it created the job.
"""

import sys
import time
from pathlib import Path

from batchq import Queue

url, key, ready, go = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
queue = Queue(url, task_modules=["jobs"])
queue.backend.conn  # noqa: B018 - connected before the start, so all enqueue together
ready.touch()
while not go.exists():
    time.sleep(0.001)
job_id = queue.enqueue("jobs:noop", {"pid": str(ready)}, unique_key=key)
print(int(job_id), job_id.created)
