"""subscribe or unsubscribe from another process, for the tests of their order against a publish.

Usage: python pubsub_admin.py URL subscribe|unsubscribe TOPIC SUBSCRIBER. Prints "ready" once
connected, waits for a line on stdin, then does it and prints the result (True/False).
"""

from __future__ import annotations

import sys

from batchq import MessageQueue


def main(url: str, action: str, topic: str, subscriber: str) -> None:
    mq = MessageQueue(url)
    mq.backend.conn  # noqa: B018 - connect before the start line
    print("ready", flush=True)
    sys.stdin.readline()
    done = mq.subscribe(topic, subscriber) if action == "subscribe" else mq.unsubscribe(topic, subscriber)
    print(done, flush=True)
    mq.close()


if __name__ == "__main__":
    main(*sys.argv[1:5])
