"""Upgrading a database that has jobs in it: `init-db` of this version over the schema of 002,
and over that of 007 (before unique keys, partitions, the worker registry, history, timeouts and
task versions).

Rows of every kind are written as 002 left them (a due job, a delayed one, one a live worker is
running, a failed one); after the upgrade none is lost and each is where it should be: the due
one runs, the delayed one waits for its time, the running one is still its worker's, the failed
one waits for a human.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import versioned_jobs

from batchq import MessageQueue, Queue, QueueFull
from batchq.backends import create_backend
from batchq.backends.sqlfiles import migrations
from batchq.runtime.sweeps import gc_error, gc_processing
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import job_rows, run_query, sibling_database_url, sql
from tests.support.rows import dead_worker

TABLES = (
    "batchq_mq_subscription",
    "batchq_mq_topic",
    "batchq_lock",
    "batchq_message_archive",
    "batchq_message",
    "batchq_mq_sent",
    "batchq_mq_meta",
    "batchq_job",
)


@pytest.fixture
def old_url(backend_name: str, tmp_path: Path) -> str:
    """A database with the schema of migration 002 and nothing else."""
    return database_at(backend_name, tmp_path, 2)


@pytest.fixture
def url_at_007(backend_name: str, tmp_path: Path) -> str:
    """A database with the schema of migration 007 (before unique keys, 008) and nothing else."""
    return database_at(backend_name, tmp_path, 7)


def database_at(backend_name: str, tmp_path: Path, upto: int) -> str:
    if backend_name == "sqlite":
        url = f"sqlite:///{tmp_path / 'old.db'}"
    else:
        url = sibling_database_url(backend_name, "upgrade")
    backend = create_backend(url)
    with backend.errors():
        cur = backend.conn.cursor()
        # every table a migration creates: one left from an earlier test would have today's columns
        later = ("batchq_worker", "batchq_partition", "batchq_lease")
        for table in ("batchq_schema", "batchq_queue", "batchq_schedule", "batchq_history", *later, *TABLES):
            cur.execute(
                f"DROP TABLE IF EXISTS {table}" + (" CASCADE" if backend_name == "postgresql" else "")
            )
        for version, _, statements in migrations(backend_name):
            if version <= upto:
                for statement in statements:
                    cur.execute(statement)
                backend.execute("schema_version_set", {"version": version})
        cur.close()
    backend.close()
    return url


def test_upgrade_keeps_every_job_runnable(backend_name: str, old_url: str) -> None:
    queue = Queue(old_url, task_modules=["jobs"])
    rows = [  # (task, status, due in seconds, error_count, locked_by)
        ("jobs:noop", "ready", 0, 0, None),
        ("jobs:noop", "ready", 3600, 2, None),  # delayed, or backing off after its 2nd failure
        ("jobs:noop", "processing", 0, 0, "a-live-worker"),
        ("jobs:fail", "failed", 0, 10, None),
    ]
    for task, status, due_in, errors, owner in rows:
        params = {"task": task, "status": status, "due_in": due_in, "error_count": errors, "owner": owner}
        run_query(queue, "job_insert_as_002_wrote_it", params)
    ids = [row["id"] for row in job_rows(queue)]
    if backend_name == "sqlite":
        sql(queue, "UPDATE sqlite_sequence SET seq = 1000 WHERE name = 'batchq_job'")  # ids of done jobs

    # 003 and every later migration (schedules, ...), in order.
    later = [name for version, name, _ in migrations(backend_name) if version > 2]
    assert later[0] == "003_scheduled.sql" and queue.init_db() == later
    assert [(row["id"], row["status"]) for row in job_rows(queue)] == [
        (ids[0], "ready"),
        (ids[1], "scheduled"),
        (ids[2], "processing"),
        (ids[3], "failed"),
    ]
    assert list(Worker(queue, RunOptions()).run().job_ids) == [ids[0]]
    run_query(queue, "jobs_make_due")  # the delayed job's time comes
    assert list(Worker(queue, RunOptions()).run().job_ids) == [ids[1]]  # promoted once due
    assert [(row["id"], row["status"]) for row in job_rows(queue)] == [
        (ids[2], "processing"),
        (ids[3], "failed"),
    ]
    assert queue.enqueue("jobs:noop") > (1000 if backend_name == "sqlite" else ids[3])  # ids not reused
    queue.close()


def test_upgrade_from_007_adds_unique_keys_and_keeps_every_job(backend_name: str, tmp_path: Path) -> None:
    """The migrations after 007 (008 unique keys, 009 partitions, ...) over a queue with waiting,
    delayed, blocked, running and failed jobs: each keeps its place, none holds a key, and keys
    work at once."""
    queue = Queue(database_at(backend_name, tmp_path, 7), task_modules=["jobs"])
    rows = [  # (task, status, due in seconds, error_count, locked_by)
        ("jobs:noop", "ready", 0, 0, None),
        ("jobs:noop", "scheduled", 3600, 2, None),
        ("jobs:noop", "blocked", 0, 0, None),  # no concurrency key: a slot is free at once
        ("jobs:noop", "processing", 0, 0, "a-live-worker"),
        ("jobs:fail", "failed", 0, 10, None),
    ]
    for task, status, due_in, errors, owner in rows:
        params = {"task": task, "status": status, "due_in": due_in, "error_count": errors, "owner": owner}
        run_query(queue, "job_insert_as_002_wrote_it", params)
    ids = [row["id"] for row in job_rows(queue)]

    assert queue.init_db() == [name for version, name, _ in migrations(backend_name) if version > 7]
    statuses = [row[1] for row in rows]
    assert [tuple(row) for row in run_query(queue, "job_unique_keys")] == [
        (job_id, status, None) for job_id, status in zip(ids, statuses)
    ]
    first = queue.enqueue("jobs:noop", unique_key="k")
    assert first.created and queue.enqueue("jobs:noop", unique_key="k") == first
    assert sorted(Worker(queue, RunOptions()).run().job_ids) == [ids[0], ids[2], first]
    run_query(queue, "jobs_make_due")  # the delayed job's time comes
    assert list(Worker(queue, RunOptions()).run().job_ids) == [ids[1]]  # promoted once due
    assert [(row["id"], row["status"]) for row in job_rows(queue)] == [
        (ids[3], "processing"),
        (ids[4], "failed"),
    ]
    assert queue.enqueue("jobs:noop", unique_key="k").created  # the first one is done
    queue.close()


def test_upgrade_from_007_keeps_jobs_and_adds_history(backend_name: str, url_at_007: str) -> None:
    """Waiting, delayed, running and failed jobs written at schema 007 survive 011 (history) and
    later migrations; the waiting ones then run and are kept, the failed one shows no
    measurements (none were taken), the running one is still its worker's."""
    queue = Queue(url_at_007, task_modules=["jobs"])
    rows = [  # (task, status, due in seconds, error_count, locked_by)
        ("jobs:noop", "ready", 0, 0, None),
        ("jobs:noop", "scheduled", 3600, 2, None),
        ("jobs:noop", "processing", 0, 0, "a-live-worker"),
        ("jobs:fail", "failed", 0, 10, None),
    ]
    for task, status, due_in, errors, owner in rows:
        params = {"task": task, "status": status, "due_in": due_in, "error_count": errors, "owner": owner}
        run_query(queue, "job_insert_as_002_wrote_it", params)
    ids = [row["id"] for row in job_rows(queue)]

    applied = queue.init_db()
    assert "011_history.sql" in applied and all(int(name[:3]) > 7 for name in applied)
    assert [(row["id"], row["status"]) for row in job_rows(queue)] == list(
        zip(ids, ["ready", "scheduled", "processing", "failed"])
    )
    [failed] = gc_error(queue)
    assert failed.id == ids[3] and failed.last_wall_seconds is None and failed.last_worker is None
    queue.configure("default", keep_for="7d")
    assert list(Worker(queue, RunOptions()).run().job_ids) == [ids[0]]
    run_query(queue, "jobs_make_due")  # the delayed job's time comes
    assert list(Worker(queue, RunOptions()).run().job_ids) == [ids[1]]
    kept = {entry.id: entry for entry in queue.history()}
    assert set(kept) == {ids[0], ids[1]}
    assert kept[ids[1]].attempts == 3  # two earlier failures, then this success
    assert [(row["id"], row["status"]) for row in job_rows(queue)] == [
        (ids[2], "processing"),
        (ids[3], "failed"),
    ]
    queue.close()


def test_upgrade_from_007_adds_timeouts_and_keeps_every_job(backend_name: str, tmp_path: Path) -> None:
    """Jobs waiting, running and failed at schema 007 survive 012 (timeouts) unchanged, with no
    timeout of their own; they run under the worker's, and a new job stores its own."""
    queue = Queue(database_at(backend_name, tmp_path, 7), task_modules=["jobs", "timeout_jobs"])
    rows = [  # (task, status, due in seconds, error_count, locked_by)
        ("timeout_jobs:spin", "ready", 0, 0, None),
        ("jobs:noop", "ready", 0, 2, None),
        ("jobs:noop", "processing", 0, 0, "a-live-worker"),
        ("jobs:fail", "failed", 0, 10, None),
    ]
    for task, status, due_in, errors, owner in rows:
        params = {"task": task, "status": status, "due_in": due_in, "error_count": errors, "owner": owner}
        run_query(queue, "job_insert_as_002_wrote_it", params)
    ids = [row["id"] for row in job_rows(queue)]

    later = [name for version, name, _ in migrations(backend_name) if version > 7]
    assert "012_timeouts.sql" in later and queue.init_db() == later
    stored = sql(queue, "SELECT id, status, error_count, timeout_seconds FROM batchq_job ORDER BY id")
    assert [tuple(r) for r in stored] == [
        (ids[0], "ready", 0, None),
        (ids[1], "ready", 2, None),
        (ids[2], "processing", 0, None),
        (ids[3], "failed", 10, None),
    ]
    summary = Worker(queue, RunOptions(timeout=0.2)).run()
    assert list(summary.job_ids) == [ids[0], ids[1]] and summary.timed_out == 1
    after = {row["id"]: row for row in job_rows(queue)}
    assert after[ids[0]]["last_error"].startswith("JobTimeout: timed out after 200ms")
    assert ids[1] not in after  # done
    assert (after[ids[2]]["status"], after[ids[3]]["status"]) == ("processing", "failed")
    new = queue.enqueue("jobs:noop", timeout="45s")
    assert sql(queue, f"SELECT timeout_seconds FROM batchq_job WHERE id = {new}") == [(45.0,)]
    queue.close()


def test_upgrade_from_007_runs_every_job_as_version_1(backend_name: str, url_at_007: str) -> None:
    """Jobs enqueued before task versions are version 1: a worker upgrades their payloads."""
    queue = Queue(url_at_007, task_modules=["jobs", "versioned_jobs"])
    task = "versioned_jobs:greet"  # version 3 here; the rows hold version-1 payloads
    rows = [  # (status, due in seconds, error_count, locked_by)
        ("ready", 0, 0, None),
        ("scheduled", 3600, 2, None),
        ("processing", 0, 0, dead_worker()),  # gone during the upgrade
        ("failed", 0, 10, None),
    ]
    for status, due_in, errors, owner in rows:
        params = {"task": task, "status": status, "due_in": due_in, "error_count": errors, "owner": owner}
        run_query(queue, "job_insert_as_002_wrote_it", params)
    run_query(queue, "jobs_set_payload", {"payload": json.dumps({"user": "ola"}).encode()})
    ids = [row["id"] for row in job_rows(queue)]

    applied = queue.init_db()
    assert "013_task_versions.sql" in applied
    assert applied == [name for version, name, _ in migrations(backend_name) if version > 7]
    assert [row["status"] for row in job_rows(queue)] == ["ready", "scheduled", "processing", "failed"]
    assert [run_query(queue, "job_version_columns", {"id": job_id})[0][0] for job_id in ids] == [None] * 4

    versioned_jobs.RECEIVED.clear()
    assert list(Worker(queue, RunOptions()).run().job_ids) == [ids[0]]
    run_query(queue, "jobs_make_due")  # the delayed job's time comes
    assert list(Worker(queue, RunOptions()).run().job_ids) == [ids[1]]  # due now
    assert [job.id for job in gc_processing(queue).requeued] == [ids[2]]  # its worker is gone
    assert [job.id for job in gc_error(queue, "requeue")] == [ids[3]]
    assert list(Worker(queue, RunOptions()).run().job_ids) == [ids[2], ids[3]]
    assert versioned_jobs.RECEIVED == [{"name": "ola", "lang": "en"}] * 4  # each upgraded 1 -> 3
    assert job_rows(queue) == []
    queue.close()


def test_upgrade_keeps_message_queues_and_their_messages(backend_name: str, tmp_path: Path) -> None:
    """Migration 014 (bounded and non-durable queues, the archive's reason) over queues written as
    the earlier schema had them: a message queue stays unbounded and durable, its waiting and
    archived messages are kept, and it sends, reads and takes a bound at once; a paused job queue
    stays paused and takes a bound."""
    before = max(version for version, _, _ in migrations(backend_name) if version < 14)
    url = database_at(backend_name, tmp_path, before)
    queue = Queue(url, task_modules=["jobs"])
    when = "'2026-01-01 00:00:00'"
    sql(queue, f"INSERT INTO batchq_mq_meta (queue, created_at) VALUES ('old', {when})")
    for shard in range(16):  # two sent, counted on shard 0
        sent = 2 if shard == 0 else 0
        sql(queue, f"INSERT INTO batchq_mq_sent (queue, shard, sent) VALUES ('old', {shard}, {sent})")
    sql(
        queue,
        "INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message, headers) "
        f"""VALUES ('old', {when}, 0, {when}, '{{"n": 1}}', NULL)""",
    )
    sql(
        queue,
        "INSERT INTO batchq_message_archive "
        "(id, queue, vt, read_ct, enqueued_at, archived_at, message, headers) "
        f"""VALUES (999999, 'old', {when}, 1, {when}, {when}, '{{"n": 0}}', NULL)""",
    )
    queue.pause("jobs")  # a paused job queue (queue_set_paused is as old as 001)
    later = [name for version, name, _ in migrations(backend_name) if version > before]
    assert later[0] == "014_bounded_queues.sql"
    queue.init_db()
    assert queue.paused_queues() == ["jobs"]
    queue.configure("jobs", max_length=1, overflow="reject")
    queue.enqueue("jobs:noop", queue="jobs")
    with pytest.raises(QueueFull):
        queue.enqueue("jobs:noop", queue="jobs")
    assert queue.paused_queues() == ["jobs"]
    queue.close()

    mq = MessageQueue(url)
    [info] = mq.list_queues()
    assert (info.queue_name, info.max_length, info.overflow, info.durable) == ("old", None, None, True)
    [archived] = mq.read_archive("old")
    assert (archived.msg_id, archived.message, archived.reason) == (999999, {"n": 0}, None)
    assert [m.message for m in mq.read("old", vt=0)] == [{"n": 1}]
    mq.send("old", {"n": 2})
    assert mq.configure_queue("old", max_length=1) == 1
    assert [m.message for m in mq.read("old", vt=30, qty=5)] == [{"n": 2}]
    assert mq.metrics("old").total_messages == 3
    mq.close()


def test_upgrade_from_007_keeps_messages_and_adds_subscriptions(backend_name: str, url_at_007: str) -> None:
    """Messages waiting, held and archived at schema 007 (written as that schema had them) survive
    016 (subscriptions, the archive's error column) and every other migration; topics work at once
    after it. The jobs beside them still run."""
    from batchq import MessageQueue
    from batchq.mq.pubsub import failures

    queue = Queue(url_at_007, task_modules=["jobs"])
    run_query(queue, "job_insert_as_002_wrote_it", {"task": "jobs:noop", "status": "ready", "due_in": 0,
                                                   "error_count": 0, "owner": None})  # fmt: skip
    past, future = "'2026-01-01 00:00:00'", "'2999-01-01 00:00:00'"
    sql(queue, f"INSERT INTO batchq_mq_meta (queue, created_at) VALUES ('mail', {past})")
    for shard in range(16):
        sql(queue, f"INSERT INTO batchq_mq_sent (queue, shard, sent) VALUES ('mail', {shard}, 0)")
    for vt, text in ((future, "held"), (past, "waiting")):
        sql(
            queue,
            "INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message, headers) "
            f"""VALUES ('mail', {vt}, 0, {past}, '"{text}"', NULL)""",
        )
    sql(
        queue,
        "INSERT INTO batchq_message_archive "
        "(id, queue, vt, read_ct, enqueued_at, archived_at, message, headers) "
        f"""VALUES (999999, 'mail', {past}, 1, {past}, {past}, '"archived"', NULL)""",
    )
    held, waiting = (row[0] for row in sql(queue, "SELECT id FROM batchq_message ORDER BY id"))

    applied = queue.init_db()
    assert "016_subscribers.sql" in applied
    mq = MessageQueue(url_at_007)
    assert [m.msg_id for m in mq.read("mail", vt=30, qty=10)] == [waiting]
    assert mq.get("mail", held) is not None and mq.get("mail", 999999) is None
    assert [a.message for a in mq.read_archive("mail")] == ["archived"]
    mq.subscribe("orders", "billing")
    assert mq.publish("orders", {"n": 1}) == 1
    assert [m.message for m in mq.read("orders:billing", vt=30)] == [{"n": 1}]
    assert failures(mq, "orders", "billing") == []
    mq.close()
    assert len(Worker(queue, RunOptions()).run().job_ids) == 1
    queue.close()


# -- new code on an older schema ----------------------------------------------------------------


def test_new_code_on_an_older_schema_says_the_schema_is_behind(backend_name: str, tmp_path: Path) -> None:
    """A database migrated only to 012 (before task versions, subscribers, leases): what needs a
    later migration's column or table says the schema is behind and to run init-db, through the
    API and the CLI (one line, no traceback), and init-db then makes it work."""
    from batchq import SchemaMissing
    from tests.support.processes import run_batchq

    url = database_at(backend_name, tmp_path, 12)
    latest = max(version for version, _, _ in migrations(backend_name))
    behind = rf"schema of .* is behind: at migration 12 of {latest}; run `batchq init-db`"
    queue, mq = Queue(url, task_modules=["jobs"]), MessageQueue(url)
    with pytest.raises(SchemaMissing, match=behind):
        queue.enqueue("jobs:noop")  # a column of 013
    with pytest.raises(SchemaMissing, match=behind):
        mq.subscribe("news", "mailer")  # a table of 016
    ran = run_batchq(url, "run")
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert re.search(behind, ran.stderr) and "tables are missing" not in ran.stderr, ran.stderr
    assert queue.init_db()
    assert queue.enqueue("jobs:noop") and mq.subscribe("news", "mailer")
    queue.close()
    mq.close()
