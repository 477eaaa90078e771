"""conn= with a Django connection (issue 24): the job commits and rolls back with Django's
transaction, on every backend, with Django's own drivers (mysqlclient on MySQL).

Django is configured once per process: each scenario runs tests/apps/django_conn_app.py in a
process of its own, against the test's database; this side looks at the rows afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from batchq import Queue
from tests.support.db import SERVER_URLS, ledger
from tests.support.processes import APPS_DIR, batchq_env, run_batchq


def run_app(db_url: str, scenario: str, tmp_path: Path) -> dict[str, Any]:
    """Run a scenario; tmp_path holds the "other" database's file for the servers' queues, and
    SQLite's "other" is the PostgreSQL test database."""
    other = SERVER_URLS["postgresql"]
    result = subprocess.run(
        [sys.executable, str(APPS_DIR / "django_conn_app.py"), db_url, scenario, str(tmp_path), other],
        env=batchq_env(db_url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def ready(queue: Queue) -> int:
    return sum(s.ready for s in queue.stats())


def test_a_job_enqueued_in_a_committed_atomic_block_exists(queue: Queue, db_url: str, tmp_path: Path) -> None:
    seen = run_app(db_url, "committed", tmp_path)
    assert ready(queue) == 1 and queue.explain(seen["id"]).state == "waiting"
    assert ledger(queue) == [1]  # the app's own row, committed with it


def test_a_job_enqueued_in_a_rolled_back_atomic_block_does_not_exist(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    seen = run_app(db_url, "rolled_back", tmp_path)
    assert seen["id"] > 0  # it was written, inside the transaction
    assert ready(queue) == 0 and ledger(queue) == []


def test_outside_atomic_django_autocommit_writes_the_job_at_once(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    seen = run_app(db_url, "autocommit", tmp_path)
    assert seen["ready_seen_at_once"] == 1  # by another connection, before the app went on
    assert ready(queue) == 1


def test_a_rolled_back_savepoint_takes_its_job_and_leaves_the_outer_blocks(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    seen = run_app(db_url, "savepoint", tmp_path)
    assert ready(queue) == 1
    assert queue.explain(seen["outer"]).state == "waiting"
    assert queue.explain(seen["inner"]).state != "waiting"


def test_a_transaction_marked_for_rollback_is_refused_as_django_refuses_it(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    seen = run_app(db_url, "broken", tmp_path)
    assert seen["refused"].startswith("TransactionManagementError")
    assert ready(queue) == 0


def test_a_django_connection_of_another_dialect_is_refused_before_connecting(
    queue: Queue, db_url: str, tmp_path: Path, backend_name: str
) -> None:
    seen = run_app(db_url, "other_dialect", tmp_path)
    other = "PostgreSQL" if backend_name == "sqlite" else "SQLite"
    expected = f"ConfigError: conn= got a Django connection ('other') to a {other} database, but"
    assert seen["refused"].startswith(expected)
    assert "enqueue_on_commit()" in seen["refused"]
    assert seen["other_connected"] is False
    assert ready(queue) == 0


def test_every_operation_on_a_django_connection(queue: Queue, db_url: str, tmp_path: Path) -> None:
    seen = run_app(db_url, "every_operation", tmp_path)
    assert seen["unique_again"] and seen["typed"]
    assert (seen["many"], seen["many_unique"]) == (2, 1)
    assert seen["read"] == [{"m": 1}, {"m": 2}] and seen["deleted"]
    assert seen["popped"] == {"m": 3} and seen["published"] == 1
    assert ready(queue) == 8  # 5 by enqueue (the second "k1" wrote nothing), 3 by enqueue_many
    # What went through Django's driver reads back as written: a worker runs every job of the
    # default queue, the pickled binary payload's signature and all.
    ran = run_batchq(db_url, "run", "--queue", "default")
    assert ran.returncode == 0, ran.stderr
    assert [(s.queue, s.ready, s.failed) for s in queue.stats()] == [("bounded", 1, 0), ("typed", 1, 0)]


# -- enqueue_on_commit: the app's transaction is in another database ("other") ------------------


def test_on_commit_the_job_is_written_after_the_block_commits(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    seen = run_app(db_url, "on_commit_committed", tmp_path)
    assert (seen["ready_inside"], seen["ready_after"], seen["notes"]) == (0, 1, [1])
    assert [(s.queue, s.ready) for s in queue.stats()] == [("mail", 1)]


def test_on_commit_nothing_is_written_when_the_block_rolls_back(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    seen = run_app(db_url, "on_commit_rolled_back", tmp_path)
    assert (seen["ready_after"], seen["notes"]) == (0, [2])


def test_on_commit_outside_atomic_writes_at_once(queue: Queue, db_url: str, tmp_path: Path) -> None:
    seen = run_app(db_url, "on_commit_autocommit", tmp_path)
    assert seen["ready_at_once"] == 1 and ready(queue) == 1


def test_on_commit_a_rolled_back_savepoint_drops_its_job(queue: Queue, db_url: str, tmp_path: Path) -> None:
    seen = run_app(db_url, "on_commit_savepoint", tmp_path)
    assert seen["ready_after"] == 1


def test_on_commit_a_failed_write_is_logged_and_raised_after_the_apps_commit(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    seen = run_app(db_url, "on_commit_failure", tmp_path)
    assert seen["raised"] == "QueueFull" and seen["notes"] == [1]
    assert seen["logged"] and "enqueueing jobs:noop into queue 'full' was not done" in seen["logged"][0]
