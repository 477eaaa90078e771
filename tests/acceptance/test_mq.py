"""The message queue with real reader processes: a message is never shared."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from batchq import MessageQueue
from tests.support.messages import Q
from tests.support.processes import APPS_DIR

# -- several processes ---------------------------------------------------------------


@pytest.mark.slow
def test_concurrent_reader_processes_never_share_a_message(db_url: str, mq: MessageQueue) -> None:
    sent = mq.send_batch(Q, [{"n": n} for n in range(300)])
    readers = [
        subprocess.Popen(
            [sys.executable, str(APPS_DIR / "mq_reader.py"), db_url, Q, str(qty)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for qty in (1, 3, 5, 1, 2, 4)
    ]
    for reader in readers:  # all connected: start them together
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
    for reader in readers:
        assert reader.stdin is not None
        reader.stdin.write("go\n")
        reader.stdin.close()
    per_reader: list[list[int]] = []
    for reader in readers:
        assert reader.stdout is not None and reader.stderr is not None
        out = reader.stdout.read()
        assert reader.wait(timeout=120) == 0, reader.stderr.read()
        reader.stderr.close()
        reader.stdout.close()
        per_reader.append(json.loads(out))
    received = [msg_id for got in per_reader for msg_id in got]
    assert len(received) == len(set(received)), "a message was read by two consumers"
    assert sorted(received) == sent
    assert sum(1 for got in per_reader if got) >= 3, f"the readers did not overlap: {per_reader}"
    assert mq.metrics(Q).queue_length == 0
