"""`batchq status` and `batchq stop` against real `batchq run` processes (issue 11 part 4)."""

from __future__ import annotations

import json
import signal
import time
from typing import Any

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows
from tests.support.processes import assert_one_line_error, start_batchq, wait_for

pytestmark = pytest.mark.slow


def workers(db_url: str) -> list[dict[str, Any]]:
    result = invoke_batchq(db_url, "status", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_status_and_stop_by_queue_then_all(queue: Queue, db_url: str, tmp_path: Any) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    # Runs until released: a slow machine may take seconds over the `batchq status` calls below.
    queue.enqueue("jobs:slow", {"started": str(started), "seconds": 120, "until": str(release)}, queue="b")
    procs = {
        name: start_batchq(db_url, "run", "--wait", "120", "--max-procs-per-host", "8", *args)
        for name, args in {
            "a": ("--queue", "a"),
            "b": ("--queue", "b"),
            "ab": ("--queue", "a", "--queue", "b"),
        }.items()
    }
    try:
        listed = wait_for(lambda: len(workers(db_url)) == 3 and started.exists() and workers(db_url))
        assert sorted(tuple(w["serves"]) for w in listed) == [("a",), ("a", "b"), ("b",)]
        assert {w["state"] for w in listed} == {"running"}
        running = wait_for(lambda: [w for w in workers(db_url) if w["job_id"] is not None])
        assert [w["serves"] for w in running] in (
            [["b"]],
            [["a", "b"]],
        )  # the slow job, on whichever took it
        text = invoke_batchq(db_url, "status").stdout.splitlines()
        assert text[0].split()[:4] == ["worker", "queues", "state", "up"] and len(text) == 4

        stopped = invoke_batchq(db_url, "stop", "--queue", "b")
        assert (stopped.returncode, stopped.stdout) == (0, "asked 2 workers to stop\n")
        release.touch()
        for name in ("b", "ab"):
            _, err = procs[name].communicate(timeout=30)  # the job at hand finishes first
            assert procs[name].returncode == 0, err
        assert job_rows(queue) == []  # the slow job ran to its end
        assert [w["serves"] for w in workers(db_url)] == [["a"]]
        assert procs["a"].poll() is None  # not asked: still waiting for jobs

        assert invoke_batchq(db_url, "stop").stdout == "asked 1 worker to stop\n"
        procs["a"].communicate(timeout=30)
        assert procs["a"].returncode == 0
        assert workers(db_url) == []
        assert invoke_batchq(db_url, "status").stdout == ""
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def test_a_killed_worker_shows_gone_and_a_live_one_stopping(queue: Queue, db_url: str) -> None:
    killed = start_batchq(db_url, "run", "--wait", "120", "--max-procs-per-host", "8")
    other = start_batchq(db_url, "run", "--wait", "120", "--max-procs-per-host", "8", "--queue", "x")
    try:
        wait_for(lambda: len(workers(db_url)) == 2)
        killed.send_signal(signal.SIGKILL)
        killed.communicate()
        gone = wait_for(lambda: [w for w in workers(db_url) if w["state"] == "gone"], timeout=15)
        assert [w["pid"] for w in gone] == [killed.pid]
        # The gone one is not there to be asked, and is not counted as asked.
        alone = invoke_batchq(db_url, "stop", "--worker", gone[0]["name"])
        assert (alone.returncode, alone.stdout) == (0, "asked 0 workers to stop\n")
        stopped = invoke_batchq(db_url, "stop")
        assert (stopped.returncode, stopped.stdout) == (0, "asked 1 worker to stop\n")
        assert {w["pid"]: w["state"] for w in workers(db_url)}.get(other.pid) in ("stopping", None)
        other.communicate(timeout=30)
        assert other.returncode == 0
        time.sleep(0.1)
        left = [(w["pid"], w["stop_requested"]) for w in workers(db_url)]
        assert left == [(killed.pid, False)]  # the gone one, until pruned
    finally:
        for proc in (killed, other):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def test_stop_mistakes_are_one_line_errors(queue: Queue, db_url: str) -> None:
    assert_one_line_error(invoke_batchq(db_url, "stop", "--queue", "a,b"), "bad queue name 'a,b'", status=2)
    assert invoke_batchq(db_url, "stop", "--host", "nowhere").stdout == "asked 0 workers to stop\n"
