"""A consumer process for the grouped-read test: read_grouped_head, mark the message's group in
flight, record it, unmark, delete; until the queue is empty.

Usage: python mq_group_reader.py URL QUEUE QTY DIR. Prints "ready" once connected, waits for a
line on stdin (so that every reader starts at once), then prints what it saw as one JSON object:
the ids it received and the violations it met. The in-flight mark of a group is a file in DIR
created with O_EXCL: finding it there means another process holds a message of the same group,
which read_grouped_head must never allow. DIR/log gets "group seq msg_id" per message, appended
while the mark is held, so each group's lines are in the order its messages were processed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from batchq import MessageQueue


def main(url: str, queue: str, qty: int, where: Path) -> None:
    mq = MessageQueue(url)
    mq.backend.conn  # noqa: B018 - connect before the start line
    print("ready", flush=True)
    sys.stdin.readline()
    received: list[int] = []
    violations: list[str] = []
    log = os.open(where / "log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    while True:
        messages = mq.read_grouped_head(queue, vt=600, qty=qty)
        if not messages:
            if mq.metrics(queue).queue_length == 0:
                break
            time.sleep(0.002)  # the others hold the heads: wait for their deletes
            continue
        for message in messages:
            group, seq = message.message["group"], message.message["seq"]
            mark = where / f"inflight-{group}"
            try:
                os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                marked = True
            except FileExistsError:  # recorded, and the message still handled: the run ends
                violations.append(
                    f"message {message.msg_id} ({group} {seq}) read while {group} was in flight"
                )
                marked = False
            os.write(log, f"{group} {seq} {message.msg_id}\n".encode())
            received.append(message.msg_id)
            time.sleep(0.001)  # some work, so that readers overlap
            if marked:
                mark.unlink()
            mq.delete(queue, message.msg_id)  # only now may the group's next message be read
    os.close(log)
    mq.close()
    print(json.dumps({"received": received, "violations": violations}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
