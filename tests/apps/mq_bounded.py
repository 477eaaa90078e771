"""Processes for the bounded-queue test: producers, consumers and a checker on one queue.

Usage: python mq_bounded.py ROLE URL QUEUE ARG
  producer URL QUEUE "P COUNT DIR"  send COUNT messages {"p": P, "n": 0..COUNT-1}, one at a
                                time; on QueueFull (overflow="reject") touch DIR/rejected, wait
                                a little and send it again. Prints {"sent": [[p, n], ...],
                                "rejected": k}.
  consumer URL QUEUE STOPFILE   once a file "gate" exists beside STOPFILE: read, record, delete,
                                until STOPFILE exists and the queue is dry. Prints [[p, n], ...]
                                as read.
  checker  URL QUEUE STOPFILE   sample the queue's length (one COUNT(*)) until STOPFILE exists.
                                Prints {"max": m, "samples": s}.
Each prints "ready" once connected and waits for a line on stdin, so that all start at once.
"""

from __future__ import annotations

import json
import os
import sys
import time

from batchq import MessageQueue, QueueFull


def produce(mq: MessageQueue, queue: str, arg: str) -> object:
    first, second, folder = arg.split()
    producer, count = int(first), int(second)
    sent, rejected = [], 0
    for n in range(count):
        while True:
            try:
                mq.send(queue, {"p": producer, "n": n})
                break
            except QueueFull:
                rejected += 1
                open(os.path.join(folder, "rejected"), "a").close()
                time.sleep(0.005)
        sent.append([producer, n])
    return {"sent": sent, "rejected": rejected}


def consume(mq: MessageQueue, queue: str, stopfile: str) -> object:
    received = []
    gate = os.path.join(os.path.dirname(stopfile), "gate")
    while not os.path.exists(gate):
        time.sleep(0.01)
    while True:
        stopping = os.path.exists(stopfile)  # looked at before the read: a dry read after it ends
        messages = mq.read(queue, vt=60, qty=3)
        for message in messages:
            received.append([message.message["p"], message.message["n"]])
            time.sleep(0.003)  # some work: producers outpace consumers, so the queue fills
            mq.delete(queue, message.msg_id)
        if not messages:
            if stopping:
                return received
            time.sleep(0.005)


def check(mq: MessageQueue, queue: str, stopfile: str) -> object:
    highest, samples = 0, 0
    while not os.path.exists(stopfile):
        highest = max(highest, mq.metrics(queue).queue_length)
        samples += 1
    return {"max": highest, "samples": samples}


def main(role: str, url: str, queue: str, arg: str) -> None:
    mq = MessageQueue(url)
    mq.backend.conn  # noqa: B018 - connect before the start line
    print("ready", flush=True)
    sys.stdin.readline()
    action = {"producer": produce, "consumer": consume, "checker": check}[role]
    result = action(mq, queue, arg)
    mq.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
