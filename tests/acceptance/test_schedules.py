"""The scheduler across processes: exactly one job per slot however many hosts tick, checked from
the jobs' own record (each scheduled job writes its slot into test_ledger), and no slot lost or
doubled when a ticking process is SIGKILLed mid-tick. Each test prints its figures (`-rP`)."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from batchq import Queue
from batchq.jobs.cron import parse_cron
from tests.support.cli import invoke_batchq
from tests.support.db import autocommit_connection, job_rows, ledger, run_query, run_query_on
from tests.support.processes import (
    APPS_DIR,
    assert_one_line_error,
    batchq_env,
    run_batchq,
    start_batchq,
    wait_for,
)

EVERY_SECOND = "* * * * * *"
TICKERS = 4
TICK_SECONDS = 20.0
MIN_SLOTS = 18  # one-second slots ticked: each one more race of the same kind


def start_ticker(url: str, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(APPS_DIR / "ticker.py"), str(seconds)],
        env=batchq_env(url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def one_per_slot(queue: Queue, first_slot: int) -> tuple[int, int, int]:
    """(slots, missing, duplicates) between the schedule's first slot and its last job's, from
    the ledger the jobs wrote."""
    stored = queue.schedules.get("every")
    assert stored is not None and stored.last_slot is not None
    last_slot = int(stored.last_slot.timestamp())
    counts = Counter(ledger(queue))
    expected = range(first_slot, last_slot + 1)
    missing = sum(1 for slot in expected if slot not in counts)
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    assert set(counts) <= set(expected), "a job for a slot outside the schedule's"
    return len(expected), missing, duplicates


@contextmanager
def running_worker(url: str) -> Iterator[None]:
    """A worker running the jobs while the tickers tick. At the end of the block, SIGTERM: it
    finishes its job and exits at once (drain runs what is left) instead of idling out a --wait
    after the last slot. Should the block fail, SIGKILL: no worker outlives its test."""
    worker = start_batchq(url, "run", "--wait", "600", "--poll-interval", "0.2")
    try:
        yield
    except BaseException:
        worker.kill()
        worker.communicate()
        raise
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err


def drain(url: str) -> None:
    result = run_batchq(url, "run")
    assert result.returncode == 0, result.stderr


def first_slot_of(queue: Queue) -> int:
    stored = queue.schedules.get("every")
    assert stored is not None and stored.next_exec is not None
    return int(stored.next_exec.timestamp())


@pytest.mark.slow
def test_four_tickers_enqueue_exactly_one_job_per_slot(queue: Queue, db_url: str, backend_name: str) -> None:
    queue.schedule("every", EVERY_SECOND, "jobs:record_slot", catch_up="all")
    first = first_slot_of(queue)
    with running_worker(db_url):
        tickers = [start_ticker(db_url, TICK_SECONDS) for _ in range(TICKERS)]
        outputs = [ticker.communicate(timeout=TICK_SECONDS + 60) for ticker in tickers]
        assert [ticker.returncode for ticker in tickers] == [0] * TICKERS, outputs
        assert all(err == "" for _, err in outputs), outputs
    drain(db_url)
    slots, missing, duplicates = one_per_slot(queue, first)
    enqueued = [int(out.split()[0]) for out, _ in outputs]
    taken = sum(int(out.split()[1]) for out, _ in outputs)
    print(
        f"schedule figures: {backend_name} tickers={TICKERS} slots={slots} missing={missing} "
        f"duplicates={duplicates} enqueued_per_ticker={enqueued} cas_lost={taken}"
    )
    assert slots >= MIN_SLOTS and (missing, duplicates) == (0, 0)
    assert sum(enqueued) == slots
    assert job_rows(queue) == []


@pytest.mark.slow
def test_tickers_sigkilled_at_random_lose_and_double_no_slot(
    queue: Queue, db_url: str, backend_name: str
) -> None:
    queue.schedule("every", EVERY_SECOND, "jobs:record_slot", catch_up="all")
    first = first_slot_of(queue)
    kills = 0
    with running_worker(db_url):
        tickers = [start_ticker(db_url, 600) for _ in range(TICKERS)]
        deadline = time.monotonic() + TICK_SECONDS
        rng = random.Random()
        try:
            while time.monotonic() < deadline:
                time.sleep(rng.uniform(0.1, 0.6))
                index = rng.randrange(TICKERS)
                tickers[index].kill()
                tickers[index].communicate()
                kills += 1
                tickers[index] = start_ticker(db_url, 600)
        finally:
            for ticker in tickers:
                ticker.kill()
                ticker.communicate()
    assert queue.tick().failed == []  # what the last kills left due, from this process
    drain(db_url)
    slots, missing, duplicates = one_per_slot(queue, first)
    print(
        f"schedule figures: {backend_name} tickers={TICKERS} SIGKILLs={kills} slots={slots} "
        f"missing={missing} duplicates={duplicates}"
    )
    assert slots >= MIN_SLOTS and (missing, duplicates) == (0, 0)


def test_sigkill_between_the_advance_and_the_enqueue(server_url: str, server_name: str, admin: Any) -> None:
    """A host dies after its compare-and-set UPDATE, while its job's INSERT waits on a table lock:
    its transaction rolls back, the slot stays due, and the next tick enqueues it once."""
    queue = Queue(server_url, task_modules=["jobs"], secret=b"test-secret")
    try:
        queue.schedule("hourly", "0 * * * *", "jobs:record_slot")
        slot = parse_cron("0 * * * *").latest_at_or_before(int(queue.schedules.server_now()))
        run_query(queue, "schedule_set_next_exec", {"name": "hourly", "at": slot})
        run_query_on(admin, server_name, "jobs_table_lock")
        ticker = start_batchq(server_url, "tick")
        monitor = autocommit_connection(server_url)

        def inserting() -> Any:
            cur = run_query_on(
                monitor, server_name, "sessions_running", {"statement": "INSERT INTO batchq_job%"}
            )
            row = cur.fetchone()
            cur.close()
            return row[0] if row else None

        session = wait_for(inserting, timeout=30)  # its UPDATE is done: the INSERT comes after it
        ticker.kill()
        ticker.communicate()
        run_query_on(monitor, server_name, "session_end", {"session": session}).close()  # the host is gone
        monitor.close()
        run_query_on(admin, server_name, "jobs_table_unlock")
        if server_name == "mysql":
            admin.commit()
        assert int(run_query(queue, "schedule_next_exec", {"name": "hourly"})[0][0]) == slot
        assert job_rows(queue) == []
        result = invoke_batchq(server_url, "tick")
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        assert invoke_batchq(server_url, "tick").returncode == 0  # a second tick: nothing more
        assert len(job_rows(queue)) == 1, (job_rows(queue), queue.schedules.list())
        drain(server_url)
        assert ledger(queue) == [slot]
        print(f"schedule figures: {server_name} SIGKILL between UPDATE and INSERT: slot enqueued once")
    finally:
        queue.close()


# -- the commands -------------------------------------------------------------------------------


def test_schedule_commands(queue: Queue, db_url: str, tmp_path: Any) -> None:
    def ok(*args: str) -> str:
        batchq = run_batchq if args[0] == "run" else invoke_batchq  # a worker runs in a process of its own
        result = batchq(db_url, *args)
        assert (result.returncode, result.stderr) == (0, ""), result
        return result.stdout

    assert ok("schedule", "add", "digest", "0 7 * * mon-fri", "jobs:echo", "--tz", "Europe/Berlin") == ""
    assert ok("schedule", "add", "every", EVERY_SECOND, "jobs:record_slot", "--payload", '{"k": 1}') == ""
    listing = ok("schedule", "list")
    assert "digest" in listing and ("+0100" in listing or "+0200" in listing)  # Berlin time
    assert "every" in listing and "never" in listing
    assert ok("schedule", "pause", "digest") == ""
    assert "(paused)" in ok("schedule", "list")
    assert ok("schedule", "resume", "digest") == ""
    slot = int(queue.schedules.server_now()) - 1
    run_query(queue, "schedule_set_next_exec", {"name": "every", "at": slot})
    assert ok("run", "--tick") == ""  # ticks, then drains what it enqueued
    (ran,) = ledger(queue)  # catch_up latest: one job, for the latest slot by the time it ticked
    assert ran >= slot
    path = tmp_path / "schedules.toml"
    path.write_text('[schedules.digest]\ncron = "0 8 * * *"\ntask = "jobs:echo"\n')
    assert ok("schedule", "sync", str(path), "--prune") == "updated digest\nremoved every\n"
    assert ok("schedule", "sync", str(path), "--prune") == ""
    assert ok("schedule", "remove", "digest") == ""
    assert ok("schedule", "list", "--json") == "[]\n"


def test_schedule_command_errors(queue: Queue, db_url: str) -> None:
    assert_one_line_error(
        invoke_batchq(db_url, "schedule", "add", "s", "0 7 * *", "jobs:noop"), "bad cron expression", status=2
    )
    assert_one_line_error(
        invoke_batchq(db_url, "schedule", "add", "s", "@daily", "jobs:noop", "--tz", "Moon/Base"),
        "unknown time zone",
        status=2,
    )
    assert_one_line_error(
        invoke_batchq(db_url, "schedule", "add", "s", "@daily", "os:system"), "not allowed", status=2
    )
    assert_one_line_error(invoke_batchq(db_url, "schedule", "remove", "nope"), "no schedule named 'nope'")
    assert_one_line_error(invoke_batchq(db_url, "schedule", "resume", "nope"), "no schedule named 'nope'")
    assert queue.schedules.list() == []
    queue.schedule("bad", EVERY_SECOND, "jobs:noop")
    run_query(queue, "schedule_set_next_exec", {"name": "bad", "at": int(queue.schedules.server_now()) - 1})
    result = invoke_batchq(db_url, "tick", BATCHQ_TASK_MODULES="other")  # this host does not allow jobs
    assert result.returncode == 1 and "schedule bad:" in result.stderr and "Traceback" not in result.stderr
    last = result.stderr.splitlines()[-1]
    assert last == "batchq: error: 1 schedule could not enqueue (bad): the next tick tries again"
    assert job_rows(queue) == []
    assert invoke_batchq(db_url, "tick").returncode == 0  # retried by the next tick
    assert len(job_rows(queue)) == 1


@pytest.mark.parametrize(
    "deep",
    [
        "schedules = " + "[" * 3000 + "]" * 3000,
        "[schedules.s]\npayload = " + "{a = " * 3000 + "1" + "}" * 3000,
    ],
)
def test_schedule_sync_of_a_deeply_nested_file_is_one_error_line(
    queue: Queue, db_url: str, tmp_path: Any, deep: str
) -> None:
    """tomllib parses nesting recursively: 3,000 levels were a RecursionError traceback."""
    path = tmp_path / "deep.toml"
    path.write_text(deep + "\n")
    result = invoke_batchq(db_url, "schedule", "sync", str(path))
    assert_one_line_error(result, str(path), "nested too deeply", "flatten it", status=2)
    assert queue.schedules.list() == []
