"""A consumer that handles a message exactly once inside the database: read, effect, delete, commit.

Usage: python mq_effect.py URL QUEUE MODE [WAIT]
  crash:  read one message on the application's connection, write its effect (a ledger row) and
          delete it in that transaction, print "effect written", then wait to be SIGKILLed before
          the commit.
  commit: the same, waiting up to WAIT seconds (default 30) for a message, then commit; prints
          {"n": ..., "read_ct": ...}, or null when no message came (WAIT 0: one read).
"""

from __future__ import annotations

import json
import os
import sys
import time

from batchq import MessageQueue
from tests.support.db import app_connection, run_query_on


def main(url: str, queue: str, mode: str, wait: str = "30") -> None:
    mq = MessageQueue(url)
    app = app_connection(url)
    deadline = time.monotonic() + (float(wait) if mode == "commit" else 5)
    while True:
        messages = mq.read(queue, vt=30, qty=1, conn=app)
        if messages or time.monotonic() >= deadline:
            break
        app.rollback()  # end the empty read's transaction: the next read sees new commits
        time.sleep(0.05)
    if not messages:
        print(json.dumps(None), flush=True)
        return
    [message] = messages
    # The effect and the delete ride in the read's transaction: all three commit, or none.
    run_query_on(
        app, mq.backend.dialect, "ledger_insert", {"n": message.message["n"], "pid": os.getpid()}
    ).close()
    mq.delete(queue, message.msg_id, conn=app)
    if mode == "crash":
        print("effect written", flush=True)
        time.sleep(600)  # SIGKILLed here, before the commit
    app.commit()
    app.close()
    print(json.dumps({"n": message.message["n"], "read_ct": message.read_ct}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
