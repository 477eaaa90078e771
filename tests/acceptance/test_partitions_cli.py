"""`batchq partitions`, `batchq partitions set N`, `run --claim partition` and what `stats` says,
as an operator runs them."""

from __future__ import annotations

import json

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows, ledger, run_query
from tests.support.processes import assert_one_line_error, run_batchq, start_batchq, wait_for, wait_for_worker


def test_set_list_and_switch_off(queue: Queue, db_url: str) -> None:
    assert invoke_batchq(db_url, "partitions").stdout == ""  # not set up: nothing to list
    assert "partitioned claims" not in invoke_batchq(db_url, "stats").stdout
    try:
        result = invoke_batchq(db_url, "partitions", "set", "3")
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        run_query(
            queue, "partition_lease_by_hand", {"partition": 1, "worker": "host:9:abcdef01", "seconds": 90}
        )
        rows = [line.split() for line in invoke_batchq(db_url, "partitions").stdout.splitlines()]
        assert rows[1:2] + rows[3:] == [["0", "-", "-"], ["2", "-", "-"]]
        assert rows[0] == ["partition", "holder", "expires", "in"]
        assert rows[2][:2] == ["1", "host:9:abcdef01"]
        assert rows[2][2] in ("1m29s", "1m28s", "1m27s")  # 90 s, less the seconds this machine took
        listed = json.loads(invoke_batchq(db_url, "partitions", "--json").stdout)
        assert [(p["partition"], p["held"], p["holder"]) for p in listed] == [
            (0, False, None),
            (1, True, "host:9:abcdef01"),
            (2, False, None),
        ]
        stats = invoke_batchq(db_url, "stats")
        assert "partitioned claims (run --claim partition): 3 partitions, 1 leased now" in stats.stdout
        assert json.loads(invoke_batchq(db_url, "stats", "--json").stdout)["partitions"] == {
            "count": 3,
            "leased": 1,
        }
    finally:
        assert invoke_batchq(db_url, "partitions", "set", "0").returncode == 0
    assert invoke_batchq(db_url, "partitions").stdout == ""


def test_run_by_partition_drains_the_queue(queue: Queue, db_url: str) -> None:
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(30)])
    try:
        assert invoke_batchq(db_url, "partitions", "set", "4").returncode == 0
        result = run_batchq(db_url, "run", "--claim", "partition", "--jobs-per-lease", "4")
        assert (result.returncode, result.stderr) == (0, "")
        assert job_rows(queue) == []
    finally:
        invoke_batchq(db_url, "partitions", "set", "0")


def test_mistakes_are_one_line_errors(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:noop")
    assert_one_line_error(
        run_batchq(db_url, "run", "--claim", "partition"),
        "partitioned claims are not set up",
        "partitions set 16",
        status=2,
    )
    assert len(job_rows(queue)) == 1
    result = invoke_batchq(db_url, "partitions", "set", "5000")
    assert result.returncode == 2 and "Traceback" not in result.stderr  # click's usage error: the range
    result = invoke_batchq(db_url, "run", "--claim", "blocks")
    assert result.returncode == 2 and "'row', 'partition'" in result.stderr


JOBS = 120


@pytest.mark.slow
@pytest.mark.parametrize("counts", [("0",), ("2",), ("6", "0", "3")], ids=["off", "fewer", "more-off-on"])
def test_partitions_set_while_partition_workers_run(
    queue: Queue, db_url: str, counts: tuple[str, ...]
) -> None:
    """`batchq partitions set` (0: off, or another count) while two `run --claim partition`
    workers drain: they finish every job and go on (by row once partitions are off), exit 0
    without a traceback; every job ran exactly once, none is left processing, and gc-processing
    finds nothing to put back."""
    queue.enqueue_many("jobs:record", [{"n": n, "sleep": 0.02} for n in range(JOBS)])
    assert invoke_batchq(db_url, "partitions", "set", "4").returncode == 0
    workers = [
        start_batchq(
            db_url,
            "run",
            "--claim",
            "partition",
            "--jobs-per-lease",
            "3",
            "--wait",
            "2",
            "--poll-interval",
            "0.05",
        )
        for _ in range(2)
    ]
    try:
        for worker in workers:  # both past their start-up check of the partitions, before a change
            wait_for_worker(queue.backend, worker)
        for step, count in enumerate(counts):
            wait_for(lambda step=step: len(ledger(queue)) >= 10 + 25 * step, timeout=60)
            result = invoke_batchq(db_url, "partitions", "set", count)
            assert (result.returncode, result.stderr) == (0, ""), result.stderr
        outcomes = [worker.communicate(timeout=120) for worker in workers]
    finally:  # no worker outlives its test
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
        invoke_batchq(db_url, "partitions", "set", "0")
    for worker, (_, err) in zip(workers, outcomes):
        assert worker.returncode == 0 and "Traceback" not in err, err
    assert [row["status"] for row in job_rows(queue)] == [], "a job left behind (processing?)"
    swept = invoke_batchq(db_url, "gc-processing")
    assert (swept.returncode, swept.stdout) == (0, "")
    ran = ledger(queue)
    assert ran == list(range(JOBS)), (
        f"lost {sorted(set(range(JOBS)) - set(ran))}, twice {[n for n in set(ran) if ran.count(n) > 1]}"
    )
