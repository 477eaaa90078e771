"""A worker run in a thread other than the main one, as an application embedding batchq might:
`python thread_worker.py TIMEOUT GRACE` (BATCHQ_URL, BATCHQ_TASK_MODULES from the environment).
No signal reaches that thread: the watchdog raises JobTimeout in it instead, and ends the
process when a blocking call keeps the job from seeing it."""

from __future__ import annotations

import sys
import threading

from batchq import Queue
from batchq.runtime.worker import RunOptions, Worker


def main() -> None:
    timeout, grace = float(sys.argv[1]), float(sys.argv[2])
    worker = Worker(Queue(), RunOptions(timeout=timeout, timeout_grace=grace))
    thread = threading.Thread(target=worker.run)
    thread.start()
    thread.join()


if __name__ == "__main__":
    main()
