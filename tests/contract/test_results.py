"""Job results (issue 30, part 1), on every backend: what is kept and when, Queue.result and
Enqueued.result, failures with their traceback, retention and its sweep, wait= with a real
worker process (and PostgreSQL's NOTIFY), unknown ids, values JSON cannot carry, and rows
written by hand."""

from __future__ import annotations

import copy
import json
import pickle
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from batchq import ConfigError, Enqueued, JobError, JobResult, Queue
from batchq.jobs import results as results_module
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import job_rows, ledger, sql
from tests.support.processes import run_batchq

MODULES = ["jobs", "result_jobs"]
ENV = {"BATCHQ_TASK_MODULES": "jobs,result_jobs"}


@pytest.fixture
def rq(db_url: str) -> Iterator[Queue]:
    """A queue that may run the results tasks (tests/apps/result_jobs.py)."""
    q = Queue(db_url, task_modules=MODULES)
    yield q
    q.close()


def drain(queue: Queue, **options: object) -> Worker:
    worker = Worker(queue, RunOptions(**options))  # type: ignore[arg-type]
    worker.run()
    return worker


def history_ids(queue: Queue) -> list[int]:
    return sorted(int(row[0]) for row in sql(queue, "SELECT id FROM batchq_history"))


def set_expiry(queue: Queue, job_id: int, when: str) -> None:
    """expires_at of a record, as the dialect writes a time: 'past' or 'future'."""
    text = "2000-01-01 00:00:00" if when == "past" else "2999-01-01 00:00:00"
    sql(queue, f"UPDATE batchq_history SET expires_at = '{text}' WHERE id = {int(job_id)}")


# -- what is kept --------------------------------------------------------------------------------


def test_a_kept_success_round_trips_its_value_and_says_when_and_where(rq: Queue) -> None:
    value = {"answer": [4, 2], "text": "é ✓", "nested": {"a": [None, True, 1.5]}}
    job = rq.enqueue("result_jobs:returns", value, keep_result=True)
    assert isinstance(job, Enqueued)
    before = job.result()
    assert (before.status, before.value, before.attempts, before.finished) == ("waiting", None, 0, False)
    assert before.enqueued_at is not None and before.enqueued_at.tzinfo is not None
    worker = drain(rq)
    assert job_rows(rq) == []
    found = rq.result(job)
    assert found == job.result()
    assert (found.id, found.status, found.value, found.error, found.note) == (
        job,
        "succeeded",
        value,
        None,
        None,
    )
    assert (found.attempts, found.worker, found.finished) == (1, worker.name, True)
    assert found.enqueued_at is not None and found.started_at is not None and found.finished_at is not None
    assert found.enqueued_at <= found.started_at <= found.finished_at
    assert all(
        t.utcoffset() == timedelta(0) for t in (found.enqueued_at, found.started_at, found.finished_at)
    )
    assert abs(found.finished_at - datetime.now(timezone.utc)) < timedelta(minutes=1)


def test_results_are_kept_only_when_asked(rq: Queue) -> None:
    plain = rq.enqueue("result_jobs:returns", 1)
    refused = rq.enqueue("result_jobs:kept", 2, keep_result=False)  # enqueue wins over @task
    by_task = rq.enqueue("result_jobs:kept", 3)
    timed = rq.enqueue("result_jobs:returns", 4, keep_result="90m")
    rq.configure("reports", keep_for="7d")  # a queue's history keeps its results too
    by_queue = rq.enqueue("result_jobs:returns", 5, queue="reports")
    none = rq.enqueue("result_jobs:returns", None, keep_result=timedelta(hours=1))
    drain(rq, queues=("default", "reports"))
    assert rq.result(plain).status == rq.result(refused).status == "unknown"
    assert [rq.result(j).value for j in (by_task, timed, by_queue)] == [3, 4, 5]
    assert (rq.result(none).status, rq.result(none).value) == ("succeeded", None)
    assert history_ids(rq) == sorted([by_task, timed, by_queue, none])
    expires = dict(sql(rq, "SELECT id, expires_at FROM batchq_history"))
    assert expires[by_queue] is None and all(expires[j] is not None for j in (by_task, timed, none))


def test_bad_keep_result_is_refused_before_anything_is_written(rq: Queue) -> None:
    for bad in (0, -5, "soon", [1], float("nan")):
        with pytest.raises(ConfigError, match="keep_result|duration"):
            rq.enqueue("result_jobs:returns", 1, keep_result=bad)
    with pytest.raises(ConfigError, match="keep_result"):
        rq.enqueue_many("result_jobs:returns", [1, 2], keep_result=-1)
    assert job_rows(rq) == []


def test_enqueue_many_keeps_each_jobs_result(rq: Queue) -> None:
    assert rq.enqueue_many("result_jobs:returns", [10, 20, 30], keep_result=True) == 3
    ids = [row["id"] for row in job_rows(rq)]
    drain(rq, batch_size=3)
    assert [rq.result(i).value for i in ids] == [10, 20, 30]


# -- failures ------------------------------------------------------------------------------------


def test_a_failure_gives_the_exception_class_path_message_and_traceback(rq: Queue) -> None:
    kept = rq.enqueue("result_jobs:raises", "the disk is full", max_errors=1, keep_result=True)
    plain = rq.enqueue("result_jobs:raises", "no space", max_errors=1)  # kept or not: its row stays
    retrying = rq.enqueue("result_jobs:raises", "later", max_errors=3, keep_result=True)
    false = rq.enqueue("result_jobs:returns_false", max_errors=1, keep_result=True)
    worker = drain(rq)
    found = rq.result(kept)
    assert (found.status, found.attempts, found.worker, found.value) == ("failed", 1, worker.name, None)
    assert found.error is not None
    assert (found.error.exception_class, found.error.message) == ("builtins.ValueError", "the disk is full")
    assert found.error.traceback.startswith("Traceback (most recent call last):\n")
    assert "raise ValueError(message)" in found.error.traceback
    assert found.error.traceback.endswith("ValueError: the disk is full\n")
    assert found.finished_at is not None and found.started_at is not None
    plain_error = rq.result(plain).error
    assert plain_error is not None and plain_error.exception_class == "builtins.ValueError"
    assert plain_error.message == "no space" and "raise ValueError" in plain_error.traceback
    again = rq.result(retrying)  # a failed try with tries left: waiting for its retry
    assert (again.status, again.attempts, again.error, again.finished) == ("waiting", 1, None, False)
    assert rq.result(false).error == JobError("", "the task returned False", "the task returned False")
    # gc-error deletes the failed rows: the kept failure is still there, the other is unknown
    sql(rq, "DELETE FROM batchq_job WHERE status = 'failed'")
    assert rq.result(kept).status == "failed"
    assert rq.result(kept).error.exception_class == "builtins.ValueError"  # type: ignore[union-attr]
    assert rq.result(plain).status == "unknown"


def test_a_cancelled_job_that_keeps_its_result_says_so(rq: Queue) -> None:
    kept = rq.enqueue("result_jobs:returns", 1, keep_result=True, delay="1h")
    plain = rq.enqueue("result_jobs:returns", 2, delay="1h")
    assert rq.cancel(kept) and rq.cancel(plain)
    assert (rq.result(kept).status, rq.result(kept).finished) == ("cancelled", True)
    assert rq.result(plain).status == "unknown"
    assert not rq.cancel(kept)  # gone: nothing more to cancel, and the record stays
    assert history_ids(rq) == [kept]


def test_a_claimed_job_is_not_cancelled_nor_recorded_as_cancelled(rq: Queue) -> None:
    job = rq.enqueue("result_jobs:returns", 1, keep_result=True)
    claim = rq.backend.stores.jobs.claim("default", "test:1:x", "token", 1)
    assert [j.id for j in claim.jobs] == [job]
    assert not rq.cancel(job)
    assert history_ids(rq) == []
    assert rq.result(job).status == "running" and rq.result(job).attempts == 1


# -- values JSON cannot carry ------------------------------------------------------------------


def test_a_value_json_cannot_carry_is_kept_as_its_repr_and_the_job_runs_once(rq: Queue, db_url: str) -> None:
    """Decided: the job succeeded (its effects happened; a retry would repeat them), so it is not
    failed for its value: the value is the JSON string of its repr, and ``note`` says so."""
    job = rq.enqueue("result_jobs:records_then_returns", {"n": 7, "returns": "set"}, keep_result=True)
    ran = run_batchq(db_url, "run", **ENV)
    assert ran.returncode == 0, ran.stderr
    found = rq.result(job)
    assert (found.status, found.value, found.attempts) == ("succeeded", "{1, 2}", 1)
    assert found.note == "not JSON (set): its repr is stored"
    assert ledger(rq) == [7] and job_rows(rq) == []


# -- unknown ids -------------------------------------------------------------------------------


def test_unknown_ids_say_unknown_and_bad_ones_are_refused(rq: Queue) -> None:
    for job_id in (1, 0, -1, 2**63, 10**30):
        assert rq.result(job_id) == JobResult(job_id, "unknown")
        assert rq.result(job_id, wait=0.2).status == "unknown"  # unknown is final: no waiting
    for bad in ("1", 1.0, True, None):
        with pytest.raises(ConfigError, match="bad job id"):
            rq.result(bad)  # type: ignore[arg-type]
    for wait in (-1, "5", float("nan"), True):
        with pytest.raises(ConfigError, match="bad wait"):
            rq.result(1, wait=wait)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="queue.result"):
        Enqueued(5).result()


def test_an_enqueued_id_pickles_and_copies_without_its_queue(rq: Queue) -> None:
    job = rq.enqueue("result_jobs:returns", 1, keep_result=True)
    for again in (pickle.loads(pickle.dumps(job)), copy.deepcopy(job), copy.copy(job)):
        assert (again, again.created, type(again)) == (job, True, Enqueued)
        with pytest.raises(ConfigError, match="queue.result"):
            again.result()
    assert job.result().status == "waiting" and json.dumps({"id": job}) == f'{{"id": {int(job)}}}'


# -- retention ------------------------------------------------------------------------------------


def test_expired_results_are_unknown_and_prune_sweeps_them(rq: Queue) -> None:
    old = rq.enqueue("result_jobs:returns", 1, keep_result="1h")
    fresh = rq.enqueue("result_jobs:returns", 2, keep_result="1h")
    drain(rq)
    set_expiry(rq, old, "past")
    assert rq.result(old).status == "unknown"  # expired: gone for result() before any prune
    assert rq.result(fresh).value == 2
    assert history_ids(rq) == sorted([old, fresh])
    assert rq.prune() == 1
    assert history_ids(rq) == [fresh]
    assert rq.prune() == 0


def test_a_queues_keep_for_spares_results_kept_longer_and_older_than_does_not(rq: Queue) -> None:
    rq.configure("default", keep_for="1h")
    rq.enqueue("result_jobs:returns", 1)
    by_job = rq.enqueue("result_jobs:returns", 2, keep_result="30d")
    drain(rq)
    sql(rq, "UPDATE batchq_history SET finished_at = '2001-01-01 00:00:00'")  # both past keep_for
    assert rq.prune() == 1
    assert history_ids(rq) == [by_job] and rq.result(by_job).value == 2
    assert rq.prune(queue="default") == 0
    assert rq.prune("1d") == 1  # --older-than is the operator's: everything that old
    assert history_ids(rq) == []


def test_prune_sweeps_expired_results_in_bounded_batches(rq: Queue) -> None:
    rq.enqueue_many("result_jobs:returns", list(range(25)), keep_result=True)
    drain(rq, batch_size=25)
    sql(rq, "UPDATE batchq_history SET expires_at = '2000-01-01 00:00:00'")
    assert results_module.prune_expired(rq.backend, batch=10) == 25
    assert history_ids(rq) == []


# -- waiting ----------------------------------------------------------------------------------------


def _start_worker_after(db_url: str, seconds: float) -> threading.Thread:
    def later() -> None:
        time.sleep(seconds)
        ran = run_batchq(db_url, "run", **ENV)
        assert ran.returncode == 0, ran.stderr

    thread = threading.Thread(target=later)
    thread.start()
    return thread


def test_wait_returns_once_a_worker_process_finishes_the_job(rq: Queue, db_url: str) -> None:
    job = rq.enqueue("result_jobs:sleeps_then_returns", {"sleep": 0.3, "value": "ok"}, keep_result=True)
    assert rq.result(job, wait=0.3).status == "waiting"  # time passed: the state, no error
    worker = _start_worker_after(db_url, 0.2)
    found = job.result(wait=60)
    worker.join()
    assert (found.status, found.value) == ("succeeded", "ok")


def test_wait_for_a_job_that_keeps_nothing_ends_when_it_is_gone_or_failed(rq: Queue, db_url: str) -> None:
    gone = rq.enqueue("result_jobs:returns", 1)
    failed = rq.enqueue("result_jobs:raises", "x", max_errors=1)
    worker = _start_worker_after(db_url, 0.2)
    assert rq.result(gone, wait=60).status == "unknown"
    assert rq.result(failed, wait=60).status == "failed"
    worker.join()


def test_postgresql_wakes_the_wait_by_notify_and_others_poll(
    rq: Queue, db_url: str, backend_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With polling slowed to once a minute, a wait of 60 s ends within seconds of the job's end
    only if something wakes it: PostgreSQL's NOTIFY (of a record written, of a job failed for
    good, kept or not). Elsewhere the poll is the only way: it still ends, at its next read."""
    slow = 60.0 if backend_name == "postgresql" else 2.0
    monkeypatch.setattr(results_module, "FIRST_POLL_SECONDS", slow)
    monkeypatch.setattr(results_module, "MAX_POLL_SECONDS", slow)
    for task, keep, status in (("returns", True, "succeeded"), ("raises", None, "failed")):
        job = rq.enqueue(f"result_jobs:{task}", "v", keep_result=keep, max_errors=1)
        assert rq.result(job).status == "waiting"
        started = time.monotonic()
        worker = _start_worker_after(db_url, 0.5)
        found = rq.result(job, wait=60)
        elapsed = time.monotonic() - started
        worker.join()
        assert found.status == status
        assert elapsed < 30, f"woken after {elapsed:.1f}s"
        if backend_name == "postgresql":
            assert found.finished_at is not None
            woke = datetime.now(timezone.utc) - found.finished_at
            assert woke < timedelta(seconds=10), woke  # not the 60 s poll


# -- rows written by hand ---------------------------------------------------------------------------


def _history_row(
    queue: Queue, job_id: int, outcome: str, result: str | None, error: str | None, when: str
) -> None:
    literal = lambda v: "NULL" if v is None else "'" + v.replace("'", "''") + "'"  # noqa: E731
    sql(
        queue,
        "INSERT INTO batchq_history (id, queue, task, serializer, outcome, attempts, enqueued_at, "
        "finished_at, result, error) VALUES "
        f"({job_id}, 'default', 'x:y', 'json', '{outcome}', 3, '{when}', '{when}', {literal(result)}, "
        f"{literal(error)})",
    )


def test_rows_written_by_hand_read_back_without_a_traceback(rq: Queue, backend_name: str) -> None:
    rq.init_db()
    _history_row(rq, 901, "succeeded", "{not json", None, "2999-12-31 23:59:59")
    _history_row(rq, 902, "failed", None, None, "2999-12-31 23:59:59")
    _history_row(rq, 903, "succeeded", "[" * 100_000 + "]" * 100_000, None, "2001-01-01 00:00:00")
    _history_row(rq, 904, "failed", None, 'ValueError: x\n  File "nowhere"\x01', "2001-01-01 00:00:00")
    sql(rq, "UPDATE batchq_history SET error_class = 'builtins.ValueError' WHERE id = 904")
    garbled = rq.result(901)
    assert (garbled.status, garbled.value, garbled.attempts) == ("succeeded", "{not json", 3)
    assert garbled.note == "the stored result is not valid JSON: its text is given"
    assert garbled.finished_at == datetime(2999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)  # as stored
    assert rq.result(902).error == JobError("", "", "")
    assert rq.result(903).status == "succeeded" and isinstance(rq.result(903).value, str)
    error = rq.result(904).error
    assert error is not None and (error.exception_class, error.message) == ("builtins.ValueError", "x")
    if backend_name == "sqlite":  # any type in any column
        sql(
            rq,
            "INSERT INTO batchq_history (id, queue, task, serializer, outcome, attempts, enqueued_at, "
            "finished_at, started_at, worker, result_note) VALUES (905, X'ff', 'x', 'json', 'succeeded', "
            "'lots', 'yesterday', 17, X'00', X'fffe', X'ff')",
        )
        odd = rq.result(905)
        assert (odd.status, odd.attempts, odd.enqueued_at, odd.finished_at, odd.started_at) == (
            "succeeded",
            0,
            None,
            None,
            None,
        )
        assert odd.worker == "\ufffd\ufffd" and odd.note == "\ufffd"
    assert {rq.result(i).status for i in range(901, 905)} <= {"succeeded", "failed"}


def test_a_job_row_written_by_hand_reads_back(rq: Queue, backend_name: str) -> None:
    job = rq.enqueue("result_jobs:returns", 1, keep_result=True)
    sql(
        rq,
        f"UPDATE batchq_job SET status = 'failed', last_error = NULL, error_count = 65535 WHERE id = {job}",
    )
    found = rq.result(job)
    assert (found.status, found.attempts, found.error) == ("failed", 65535, JobError("", "", ""))


def test_migration_020_keeps_the_history_there_and_reads_it_as_results(
    backend_name: str, tmp_path: Path
) -> None:
    """A database at 019 with a kept success and a kept failure: 020 (on SQLite a rebuild of
    batchq_history) keeps both, and result() reads them; new results work at once."""
    from tests.contract.test_upgrade import database_at

    url = database_at(backend_name, tmp_path, 19)
    q = Queue(url, task_modules=MODULES)
    try:
        _history_row(q, 41, "succeeded", '{"a": 1}', None, "2026-01-01 00:00:00")
        _history_row(q, 42, "failed", None, "ValueError: no\n", "2026-01-01 00:00:00")
        assert q.init_db()[0] == "020_results.sql"  # then the later migrations, if any
        assert (q.result(41).status, q.result(41).value, q.result(41).attempts) == ("succeeded", {"a": 1}, 3)
        assert (q.result(42).status, q.result(42).error) == (
            "failed",
            JobError("", "ValueError: no", "ValueError: no"),
        )
        assert [entry.id for entry in q.history()] == [42, 41]
        job = q.enqueue("result_jobs:returns", [1], keep_result=True)
        drain(q)
        assert job.result().value == [1]
        assert q.prune("1d") == 2
    finally:
        q.close()


# -- pickled results (only with a signed, pickled payload) -------------------------------------


def test_a_pickled_jobs_value_json_cannot_carry_is_kept_pickled_and_signed(db_url: str) -> None:
    """A job whose enqueuer opted in to pickle (a signed payload) keeps a value JSON cannot carry
    pickled and signed as its payload is; read back only with the secret. JSON values stay JSON,
    and a JSON job's set is still its repr (nobody opted in to pickle there)."""
    from batchq.jobs.history import PICKLED_NOTE

    signed = Queue(db_url, task_modules=MODULES, secret=b"s3cret")
    try:
        when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
        pickled = signed.enqueue("result_jobs:returns", {when}, serializer="pickle", keep_result=True)
        plain = signed.enqueue("result_jobs:returns", [1], serializer="pickle", keep_result=True)
        json_job = signed.enqueue("result_jobs:returns_a_set", keep_result=True)
        drain(signed)
        assert (signed.result(pickled).value, signed.result(pickled).note) == ({when}, None)
        assert (signed.result(plain).value, signed.result(plain).note) == ([1], None)
        assert signed.result(json_job).value == "{1, 2}"
        notes = dict(sql(signed, "SELECT id, result_note FROM batchq_history"))
        assert notes[pickled] == PICKLED_NOTE and notes[plain] is None
        for other, why in (
            (Queue(db_url), "give Queue(secret=...)"),
            (Queue(db_url, secret="wrong"), "signature"),
        ):
            found = other.result(pickled)
            assert found.status == "succeeded" and found.value is None and why in (found.note or "")
            other.close()
        sql(signed, f"UPDATE batchq_history SET result = '\"not base64!\"' WHERE id = {int(pickled)}")
        assert signed.result(pickled).note == "kept pickled, but its text is not base64: not read"
    finally:
        signed.close()


def test_results_are_kept_by_batch_and_partition_claims_too(rq: Queue) -> None:
    """Every claim path that finishes jobs keeps the ones that ask: a batch mixing kept and
    unkept jobs, and claims within leased partitions (which finish kept jobs before claiming)."""
    ids = [rq.enqueue("result_jobs:returns", i, keep_result=bool(i % 2)) for i in range(6)]
    drain(rq, batch_size=4)
    assert [rq.result(i).status for i in ids] == ["unknown", "succeeded"] * 3
    assert [rq.result(i).value for i in ids[1::2]] == [1, 3, 5]
    rq.set_partitions(2)
    try:
        more = [rq.enqueue("result_jobs:returns", i, keep_result=True) for i in range(10, 14)]
        drain(rq, claim="partition")
        assert [rq.result(i).value for i in more] == [10, 11, 12, 13]
    finally:
        rq.set_partitions(0)
