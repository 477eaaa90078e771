"""A consumer process for the concurrent-reader test: read, record, delete, until the queue is dry.

Usage: python mq_reader.py URL QUEUE QTY. Prints "ready" once connected, waits for a line on
stdin (so that every reader starts at once), then prints the ids it received as one JSON list.
"""

from __future__ import annotations

import json
import sys
import time

from batchq import MessageQueue


def main(url: str, queue: str, qty: int) -> None:
    mq = MessageQueue(url)
    mq.backend.conn  # noqa: B018 - connect before the start line
    print("ready", flush=True)
    sys.stdin.readline()
    received: list[int] = []
    empty_reads = 0
    while empty_reads < 5:  # a few empty reads in a row: the others have the rest
        messages = mq.read(queue, vt=60, qty=qty)
        empty_reads = 0 if messages else empty_reads + 1
        for message in messages:
            received.append(message.msg_id)
            time.sleep(0.001)  # some work, so that readers overlap
            mq.delete(queue, message.msg_id)
    mq.close()
    print(json.dumps(received), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
