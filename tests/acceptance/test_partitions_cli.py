"""`batchq partitions`, `batchq partitions set N`, `run --claim partition` and what `stats` says,
as an operator runs them."""

from __future__ import annotations

import json

from batchq import Queue
from tests.support.db import job_rows, run_query
from tests.support.processes import assert_one_line_error, run_batchq


def test_set_list_and_switch_off(queue: Queue, db_url: str) -> None:
    assert run_batchq(db_url, "partitions").stdout == ""  # not set up: nothing to list
    assert "partitioned claims" not in run_batchq(db_url, "stats").stdout
    try:
        result = run_batchq(db_url, "partitions", "set", "3")
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        run_query(
            queue, "partition_lease_by_hand", {"partition": 1, "worker": "host:9:abcdef01", "seconds": 90}
        )
        rows = [line.split() for line in run_batchq(db_url, "partitions").stdout.splitlines()]
        assert rows[1:2] + rows[3:] == [["0", "-", "-"], ["2", "-", "-"]]
        assert rows[0] == ["partition", "holder", "expires", "in"]
        assert rows[2][:2] == ["1", "host:9:abcdef01"]
        assert rows[2][2] in ("1m29s", "1m28s", "1m27s")  # 90 s, less the seconds this machine took
        listed = json.loads(run_batchq(db_url, "partitions", "--json").stdout)
        assert [(p["partition"], p["held"], p["holder"]) for p in listed] == [
            (0, False, None),
            (1, True, "host:9:abcdef01"),
            (2, False, None),
        ]
        stats = run_batchq(db_url, "stats")
        assert "partitioned claims (run --claim partition): 3 partitions, 1 leased now" in stats.stdout
        assert json.loads(run_batchq(db_url, "stats", "--json").stdout)["partitions"] == {
            "count": 3,
            "leased": 1,
        }
    finally:
        assert run_batchq(db_url, "partitions", "set", "0").returncode == 0
    assert run_batchq(db_url, "partitions").stdout == ""


def test_run_by_partition_drains_the_queue(queue: Queue, db_url: str) -> None:
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(30)])
    try:
        assert run_batchq(db_url, "partitions", "set", "4").returncode == 0
        result = run_batchq(db_url, "run", "--claim", "partition", "--jobs-per-lease", "4")
        assert (result.returncode, result.stderr) == (0, "")
        assert job_rows(queue) == []
    finally:
        run_batchq(db_url, "partitions", "set", "0")


def test_mistakes_are_one_line_errors(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:noop")
    assert_one_line_error(
        run_batchq(db_url, "run", "--claim", "partition"),
        "partitioned claims are not set up",
        "partitions set 16",
        status=2,
    )
    assert len(job_rows(queue)) == 1
    result = run_batchq(db_url, "partitions", "set", "5000")
    assert result.returncode == 2 and "Traceback" not in result.stderr  # click's usage error: the range
    result = run_batchq(db_url, "run", "--claim", "blocks")
    assert result.returncode == 2 and "'row', 'partition'" in result.stderr
