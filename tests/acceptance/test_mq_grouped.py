"""FIFO reads by group (MessageQueue.read_grouped_head) with several reader processes: no group
ever has two messages in flight, each group is processed in order, nothing is lost or read twice."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from batchq import MessageQueue
from tests.support.messages import Q
from tests.support.processes import APPS_DIR

GROUPS, PER_GROUP = 8, 20


@pytest.mark.slow
def test_grouped_readers_never_hold_two_messages_of_a_group(
    db_url: str, mq: MessageQueue, tmp_path: Path
) -> None:
    order = [group for group in range(GROUPS) for _ in range(PER_GROUP)]
    random.Random(28).shuffle(order)  # the groups interleaved in the queue
    seqs = dict.fromkeys(range(GROUPS), 0)
    batch = []
    for group in order:
        batch.append({"group": f"g{group}", "seq": seqs[group]})
        seqs[group] += 1
    sent = mq.send_batch(Q, batch, headers=[{"x-pgmq-group": m["group"]} for m in batch])
    readers = [
        subprocess.Popen(
            [sys.executable, str(APPS_DIR / "mq_group_reader.py"), db_url, Q, str(qty), str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for qty in (1, 2, 3, 4)
    ]
    for reader in readers:  # all connected: start them together
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
    for reader in readers:
        assert reader.stdin is not None
        reader.stdin.write("go\n")
        reader.stdin.close()
    reports = []
    for reader in readers:
        assert reader.stdout is not None and reader.stderr is not None
        out = reader.stdout.read()
        assert reader.wait(timeout=300) == 0, reader.stderr.read()
        reader.stderr.close()
        reader.stdout.close()
        reports.append(json.loads(out))
    assert [v for report in reports for v in report["violations"]] == []
    received = [msg_id for report in reports for msg_id in report["received"]]
    assert len(received) == len(set(received)), "a message was read by two consumers"
    assert sorted(received) == sent
    per_group: dict[str, list[int]] = {}
    for line in (tmp_path / "log").read_text().splitlines():
        group, seq, _ = line.split()
        per_group.setdefault(group, []).append(int(seq))
    assert per_group == {f"g{g}": list(range(PER_GROUP)) for g in range(GROUPS)}
    assert sum(1 for report in reports if report["received"]) >= 2, f"the readers did not overlap: {reports}"
    assert mq.metrics(Q).queue_length == 0
