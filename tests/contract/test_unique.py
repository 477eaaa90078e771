"""Unique jobs (issue 12): while a job with a unique key is waiting or running, an enqueue with
that key writes nothing and returns that job's id; every backend, real servers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import unicodedata
from typing import Any

import pytest

from batchq import ConfigError, Enqueued, Queue
from batchq.runtime.sweeps import gc_error, gc_processing
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import app_connection, job_rows, run_query


def keys(queue: Queue) -> list[tuple[Any, ...]]:
    """(id, status, unique_key) of every job, by id."""
    return [tuple(row) for row in run_query(queue, "job_unique_keys")]


def claim_one(queue: Queue, worker: str = "host:1:00000000") -> None:
    """Claim a job and leave it processing, as a worker in the middle of running it."""
    assert len(queue.backend.stores.jobs.claim("default", worker, "t" * 32).jobs) == 1


def run_all(queue: Queue) -> None:
    Worker(queue, RunOptions(backoff_base=60)).run()


def test_a_second_enqueue_returns_the_waiting_job_and_writes_nothing(queue: Queue) -> None:
    first = queue.enqueue("jobs:noop", {"n": 1}, unique_key="invoice:42")
    again = queue.enqueue("jobs:record", {"n": 2}, queue="other", priority=5, unique_key="invoice:42")
    assert isinstance(first, Enqueued) and first.created
    assert again == first and not again.created  # another task, queue or payload: the key decides
    other = queue.enqueue("jobs:noop", unique_key="invoice:43")
    assert other.created and other != first
    [row, _] = job_rows(queue)
    assert (row["id"], row["task"], row["queue"]) == (first, "jobs:noop", "default")  # untouched
    plain = queue.enqueue("jobs:noop")  # no key: every enqueue writes a job
    assert plain.created and isinstance(plain, int) and json.dumps([plain]) == f"[{int(plain)}]"


def test_the_key_is_held_while_delayed_blocked_retrying_and_running(queue: Queue) -> None:
    delayed = queue.enqueue("jobs:noop", delay="1h", unique_key="delayed")
    retrying = queue.enqueue("jobs:fail", "x", queue="retry", unique_key="retrying")
    Worker(queue, RunOptions(queues=("retry",), backoff_base=60)).run()  # fails once, backs off
    blocked = queue.enqueue("jobs:noop", concurrency_key="c", unique_key="blocked")
    running = queue.enqueue("jobs:noop", unique_key="running")
    claim_one(queue)
    assert [row[1] for row in keys(queue)] == ["scheduled", "scheduled", "blocked", "processing"]
    held = {"delayed": delayed, "blocked": blocked, "retrying": retrying, "running": running}
    for key, job_id in held.items():
        again = queue.enqueue("jobs:noop", unique_key=key)
        assert (again, again.created) == (job_id, False)
    assert len(keys(queue)) == 4


def test_a_job_put_back_by_gc_processing_keeps_its_key(queue: Queue) -> None:
    job_id = queue.enqueue("jobs:noop", unique_key="k")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    claim_one(queue, worker=f"{socket.gethostname()}:{dead.pid}:00000000")  # a worker gone
    [put_back] = gc_processing(queue).requeued
    assert put_back.id == job_id and keys(queue) == [(job_id, "ready", "k")]
    assert queue.enqueue("jobs:noop", unique_key="k") == job_id


def test_after_success_or_cancel_the_key_is_free(queue: Queue) -> None:
    done = queue.enqueue("jobs:noop", unique_key="k")
    run_all(queue)
    assert job_rows(queue) == []
    second = queue.enqueue("jobs:noop", unique_key="k")
    assert second.created and second != done
    assert queue.cancel(second)
    third = queue.enqueue("jobs:noop", unique_key="k")
    assert third.created and third not in (done, second)
    assert queue.cancel_where("default") == 1
    assert queue.enqueue("jobs:noop", unique_key="k").created


def test_a_failed_job_frees_its_key_and_is_requeued_only_once_the_key_is_free(queue: Queue) -> None:
    failed = queue.enqueue("jobs:fail", "x", max_errors=1, unique_key="k")
    run_all(queue)
    assert keys(queue) == [(failed, "failed", "k")]
    newer = queue.enqueue("jobs:noop", unique_key="k")  # out of tries: a new enqueue writes a job
    assert newer.created and newer != failed
    [listed] = gc_error(queue)
    assert listed.unique_key == "k"
    [kept] = gc_error(queue, "requeue")  # its key is taken: it stays failed, and says by whom
    assert (kept.id, kept.status, kept.key_held_by) == (failed, "failed", newer)
    assert keys(queue) == [(failed, "failed", "k"), (newer, "ready", "k")]
    run_all(queue)  # the newer one succeeds: the key is free again
    [requeued] = gc_error(queue, "requeue")
    assert (requeued.id, requeued.status, requeued.key_held_by) == (failed, "ready", None)
    assert queue.enqueue("jobs:noop", unique_key="k") == failed  # it holds its key again


def test_enqueue_many_writes_the_payloads_whose_key_is_free(queue: Queue) -> None:
    held = queue.enqueue("jobs:noop", unique_key="b")
    payloads = [{"i": i} for i in range(5)]
    created = queue.enqueue_many("jobs:noop", payloads, unique_keys=["a", "b", None, "a", "c"])
    assert created == 3  # "b" is held, the second "a" repeats the first
    rows = keys(queue)
    assert [(status, key) for _, status, key in rows] == [
        ("ready", "b"),
        ("ready", "a"),
        ("ready", None),
        ("ready", "c"),
    ]
    assert rows[0][0] == held
    assert queue.enqueue_many("jobs:noop", payloads[:2], unique_keys=["a", "c"]) == 0
    assert queue.enqueue_many("jobs:noop", [], unique_keys=[]) == 0


def test_enqueue_many_refuses_bad_keys_before_writing_anything(queue: Queue) -> None:
    with pytest.raises(ConfigError, match="2 keys for 3 payloads"):
        queue.enqueue_many("jobs:noop", [1, 2, 3], unique_keys=["a", "b"])
    with pytest.raises(ConfigError, match="bad unique_key ''"):
        queue.enqueue_many("jobs:noop", [1, 2], unique_keys=["a", ""])
    assert job_rows(queue) == []


@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_enqueue_with_conn_joins_the_callers_transaction(queue: Queue, db_url: str, outcome: str) -> None:
    conn = app_connection(db_url)
    try:
        first = queue.enqueue("jobs:noop", unique_key="k", conn=conn)
        again = queue.enqueue("jobs:noop", unique_key="k", conn=conn)  # sees its own transaction's job
        assert first.created and (again, again.created) == (first, False)
        assert queue.enqueue_many("jobs:noop", [1, 2, 3], unique_keys=["k", "m", "m"], conn=conn) == 1
        getattr(conn, outcome)()
    finally:
        conn.close()
    if outcome == "commit":
        assert [key for _, _, key in keys(queue)] == ["k", "m"]
        assert queue.enqueue("jobs:noop", unique_key="k") == first
    else:
        assert keys(queue) == []
        assert queue.enqueue("jobs:noop", unique_key="k").created


HOSTILE_KEYS = [
    "k",
    "k ",  # MySQL's utf8mb4_bin pads: the key compares as bytes there
    " k",
    "K",
    unicodedata.normalize("NFC", "café"),
    unicodedata.normalize("NFD", "café"),  # other bytes, another key
    "🎉" * 255,  # 255 characters of 4 bytes
    "x" * 255,
    "'; DROP TABLE batchq_job; --",
    "a\nb\tc\\",
    "%s %(unique_key)s :unique_key ?",
]


def test_hostile_keys_are_each_their_own_key(queue: Queue) -> None:
    ids = [queue.enqueue("jobs:noop", unique_key=key) for key in HOSTILE_KEYS]
    assert all(job_id.created for job_id in ids) and len(set(ids)) == len(HOSTILE_KEYS)
    again = [queue.enqueue("jobs:noop", unique_key=key) for key in HOSTILE_KEYS]
    assert again == ids and not any(job_id.created for job_id in again)
    assert [key for _, _, key in keys(queue)] == HOSTILE_KEYS  # stored as given


@pytest.mark.parametrize("bad", ["", "x" * 256, "a\x00b", 42, b"k", "\ud800", True])
def test_bad_keys_are_refused_before_anything_is_written(queue: Queue, bad: Any) -> None:
    with pytest.raises(ConfigError, match="bad unique_key"):
        queue.enqueue("jobs:noop", unique_key=bad)
    assert job_rows(queue) == []


def test_a_row_written_by_plain_sql_holds_its_key_while_waiting(queue: Queue) -> None:
    run_query(queue, "job_insert_unique", {"status": "ready", "unique_key": "by hand"})
    run_query(queue, "job_insert_unique", {"status": "failed", "unique_key": "failed by hand"})
    [(by_hand, _, _), (failed, _, _)] = keys(queue)
    assert queue.enqueue("jobs:noop", unique_key="by hand") == by_hand
    created = queue.enqueue("jobs:noop", unique_key="failed by hand")
    assert created.created and created != failed


def test_explain_names_the_key(queue: Queue) -> None:
    job_id = queue.enqueue("jobs:noop", unique_key="invoice:42")
    explanation = queue.explain(job_id)
    assert explanation.unique_key == "invoice:42"
    assert any("unique key 'invoice:42'" in line for line in explanation.details)
    assert queue.explain(queue.enqueue("jobs:noop")).unique_key is None
