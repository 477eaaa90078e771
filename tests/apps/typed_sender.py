"""A producer for the typed-queue tests: `python typed_sender.py URL KIND QUEUE COUNT PAUSE`.

KIND is mq (MessageQueue.send) or jobs (Queue.enqueue of jobs:noop). Sends {"n": i} for i in
[0, COUNT), negative for odd i, sleeping PAUSE seconds between; prints one line per send,
"ok" or "refused", flushed, then "done". Any other error fails it.
"""

import sys
import time

from batchq import MessageQueue, Queue
from batchq.errors import PayloadInvalid

url, kind, queue, count, pause = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
mq, jobs = MessageQueue(url), Queue(url, task_modules=["jobs"])
print("ready", flush=True)
for i in range(count):
    payload = {"n": -i if i % 2 else i}
    try:
        if kind == "mq":
            mq.send(queue, payload)
        else:
            jobs.enqueue("jobs:noop", payload, queue=queue)
        print("ok", flush=True)
    except PayloadInvalid:
        print("refused", flush=True)
    time.sleep(pause)
print("done", flush=True)
