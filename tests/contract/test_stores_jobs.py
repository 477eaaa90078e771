"""The job store's contract (batchq.stores.jobs): each method called directly, on every dialect.

What the features build on it (the worker's loop, enqueue's options, the sweeps) is tested in
test_contract.py and the feature tests; here the operations alone, so that a dialect's store
can be checked by itself.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from batchq import Queue
from batchq.backends import DuplicateKey
from batchq.core.job import Job, Kept
from batchq.stores.jobs import JobStore, MySQLJobStore, PostgreSQLJobStore, SQLiteJobStore, enqueue_statement
from tests.support.db import app_connection, job_rows, run_query, sql

WORKER, OTHER = "host:1:aaaa", "host:2:bbbb"
TOKEN, TOKEN2, TOKEN3 = "t" * 32, "u" * 32, "v" * 32
VARIANTS = {"mysql": MySQLJobStore, "postgresql": PostgreSQLJobStore, "sqlite": SQLiteJobStore}
NOT_MEASURED = {"wall": None, "cpu": None, "peak": None, "growth": None}


def store(queue: Queue) -> JobStore:
    return queue.backend.stores.jobs


def row(q: Queue, payload: Any = None, /, **options: Any) -> dict[str, Any]:
    """A job row as enqueue builds it (its payload serialised), nothing written."""
    builder = q.builder
    template = builder.template(builder.spec("jobs:noop", **options))
    return builder.row(template, payload)


def statuses(queue: Queue) -> dict[int, str]:
    return {r["id"]: r["status"] for r in job_rows(queue)}


def claimed(queue: Queue, limit: int = 1, queue_name: str = "default") -> list[Job]:
    return store(queue).claim(queue_name, WORKER, TOKEN, limit).jobs


def error_params(job: Job, delay: float = 0, error: str = "ValueError: no") -> dict[str, Any]:
    return {
        "id": job.id,
        "token": job.claim_token,
        "error": error,
        "error_class": "builtins.ValueError",
        "fingerprint": "f" * 16,
        "delay": delay,
        **NOT_MEASURED,
    }


def test_each_dialect_gets_its_variant(queue: Queue) -> None:
    assert type(store(queue)) is VARIANTS[queue.backend.dialect]
    assert store(queue) is store(queue)  # made once per connection


# -- enqueue ------------------------------------------------------------------------------


def test_insert_job_writes_one_ready_row_and_gives_its_id(queue: Queue) -> None:
    first = store(queue).insert_job(row(queue, {"n": 1}))
    second = store(queue).insert_job(row(queue, {"n": 2}, queue="mail", priority=3))
    assert second > first
    assert [(r["id"], r["queue"], r["status"]) for r in job_rows(queue)] == [
        (first, "default", "ready"),
        (second, "mail", "ready"),
    ]
    [job] = claimed(queue, queue_name="mail")
    assert (job.id, job.priority, json.loads(job.payload)) == (second, 3, {"n": 2})


def test_insert_job_on_the_callers_connection_is_its_transaction(queue: Queue, db_url: str) -> None:
    conn = app_connection(db_url)
    try:
        app = queue.backend.app_connection(conn)
        store(queue).insert_job(row(queue, "rolled back"), app)
        conn.rollback()
        assert job_rows(queue) == []
        job_id = store(queue).insert_job(row(queue, "committed"), app)
        conn.commit()
        assert [r["id"] for r in job_rows(queue)] == [job_id]
    finally:
        conn.close()


def test_insert_jobs_writes_one_job_per_payload_in_order(queue: Queue) -> None:
    template = row(queue)
    payloads = [f'{{"i": {i}}}'.encode() for i in range(250)]
    assert store(queue).insert_jobs(template, payloads) == 250
    jobs = claimed(queue, limit=300)
    assert [job.payload for job in jobs] == payloads  # same priority: claimed in id order
    assert len({job.id for job in jobs}) == 250


# Every column a job's insert sets, but its id and its times (now, on the server's clock).
WRITTEN = (
    "queue, task, payload, serializer, priority, status, max_errors, concurrency_key, "
    "concurrency_limit, claim_partition, timeout_seconds, task_version, backoff, keep_result, "
    "expires_at, trace_context, rate_key, rate_limit, rate_period, error_count, unique_key"
)


@pytest.mark.parametrize("many", [False, True], ids=["one", "many"])
def test_enqueue_now_writes_the_row_enqueue_writes_for_a_job_due_now(queue: Queue, many: bool) -> None:
    """enqueue_now (enqueue_statement's pick for a job due now with no key, expiry, rate or
    partitions) leaves out enqueue's arithmetic, never a column's value."""
    template = row(queue, {"a": 1}, priority=3, max_errors=4, timeout=9, backoff=2, keep_result=60)
    assert enqueue_statement("enqueue", template) == "enqueue_now"
    if many:
        store(queue).insert_jobs(template, [template["payload"]])
    else:
        store(queue).insert_job(template)
    statement = "enqueue_many" if many and queue.backend.dialect == "postgresql" else "enqueue"
    with_options = {**template, "payloads": [template["payload"]]}
    sql(queue, queue.backend.sql(statement), with_options)  # the statement that spells them out
    now, spelt_out = sql(queue, f"SELECT {WRITTEN} FROM batchq_job ORDER BY id")
    assert now == spelt_out
    [(same_times,)] = sql(
        queue,
        "SELECT COUNT(*) FROM batchq_job WHERE run_at = created_at AND processing_at IS NULL",
    )
    assert same_times == 2  # due as it is written, as enqueue makes a job due now


@pytest.mark.parametrize(
    "options",
    [
        {"delay": 5},
        {"concurrency_key": "k"},
        {"expires": 3600},
        {"rate_key": "k", "rate": "1/s"},
    ],
    ids=["delay", "concurrency_key", "expires", "rate_key"],
)
def test_a_job_with_an_option_enqueue_now_leaves_out_takes_enqueue(queue: Queue, options: dict) -> None:
    assert enqueue_statement("enqueue", row(queue, None, **options)) == "enqueue"
    assert enqueue_statement("enqueue", {**row(queue), "partitions": 4}) == "enqueue"


def test_insert_jobs_of_none_payloads(queue: Queue) -> None:
    assert store(queue).insert_jobs(row(queue), [None, None]) == 2
    assert [job.payload for job in claimed(queue, limit=5)] == [None, None]


def test_insert_unique_writes_once_and_unique_holder_names_the_holder(queue: Queue) -> None:
    jobs = store(queue)
    assert jobs.unique_holder("order:1") is None
    first = jobs.insert_unique({**row(queue), "unique_key": "order:1"})
    assert first is not None
    assert jobs.insert_unique({**row(queue), "unique_key": "order:1"}) is None  # nothing written
    assert jobs.unique_holder("order:1") == first
    assert len(job_rows(queue)) == 1
    other = jobs.insert_unique({**row(queue), "unique_key": "order:2"})
    assert other is not None and other != first


def test_insert_unique_jobs_writes_the_rows_whose_key_is_free(queue: Queue) -> None:
    jobs = store(queue)
    held = jobs.insert_unique({**row(queue), "unique_key": "a"})
    rows = [{**row(queue), "unique_key": key} for key in ("a", "b", "c")]
    assert jobs.insert_unique_jobs(rows) == 2
    assert jobs.unique_holder("a") == held
    assert {jobs.unique_holder("b"), jobs.unique_holder("c")} <= {r["id"] for r in job_rows(queue)}
    assert len(job_rows(queue)) == 3


# -- the job cycle ------------------------------------------------------------------------


def test_claim_takes_the_highest_priority_then_the_oldest_and_marks_them(queue: Queue) -> None:
    jobs = store(queue)
    low = jobs.insert_job(row(queue, priority=0))
    high = jobs.insert_job(row(queue, priority=5))
    later = jobs.insert_job(row(queue, priority=0))
    claim = jobs.claim("default", WORKER, TOKEN, 2)
    assert claim.deleted == 0
    assert [job.id for job in claim.jobs] == [high, low]
    assert all(job.claim_token == TOKEN for job in claim.jobs)
    assert statuses(queue) == {low: "processing", high: "processing", later: "ready"}
    assert {r["locked_by"] for r in job_rows(queue) if r["status"] == "processing"} == {WORKER}
    assert jobs.claim("mail", WORKER, TOKEN2).jobs == []  # another queue's


def test_claim_deletes_the_finished_jobs_it_is_given(queue: Queue) -> None:
    jobs = store(queue)
    first, second = jobs.insert_job(row(queue)), jobs.insert_job(row(queue))
    done = claimed(queue)
    claim = jobs.claim("default", WORKER, TOKEN2, 1, done)
    assert (claim.deleted, [job.id for job in claim.jobs]) == (1, [second])
    assert first not in statuses(queue)
    assert jobs.claim("default", WORKER, TOKEN, 1, claim.jobs) == type(claim)(1, [])
    assert job_rows(queue) == []


def test_claim_keeps_what_it_deletes_when_asked(queue: Queue) -> None:
    jobs = store(queue)
    ids = [jobs.insert_job(row(queue)) for _ in range(3)]
    done = claimed(queue, limit=2)
    kept = [Kept(ids[0], 1_000_000, 500, None, None, '{"ok": 1}')]
    claim = jobs.claim("default", WORKER, TOKEN2, 1, done, kept=kept)
    assert (claim.deleted, [job.id for job in claim.jobs]) == (2, [ids[2]])
    [entry] = queue.history()
    assert (entry.id, entry.outcome, entry.result) == (ids[0], "succeeded", {"ok": 1})
    assert entry.wall_seconds == pytest.approx(0.001)


def test_claim_in_a_partition_takes_only_that_partitions_jobs(queue: Queue) -> None:
    queue.set_partitions(2)
    try:
        jobs = store(queue)
        ids = [jobs.insert_job(row(queue)) for _ in range(2)]
        for partition, job_id in enumerate(ids):
            run_query(queue, "job_set_partition", {"id": job_id, "partition": partition})
        claim = jobs.claim("default", WORKER, TOKEN, 5, partition=1)
        assert [job.id for job in claim.jobs] == [ids[1]]
        assert statuses(queue) == {ids[0]: "ready", ids[1]: "processing"}
    finally:
        queue.set_partitions(0)


def test_delete_jobs_is_fenced_by_the_claim_token(queue: Queue) -> None:
    jobs = store(queue)
    jobs.insert_job(row(queue))
    [job] = claimed(queue)
    stale = replace(job, claim_token="x" * 32)  # the job as a claim it lost saw it
    assert jobs.delete_jobs([stale]) == 0
    assert jobs.delete_jobs([job]) == 1
    assert jobs.delete_jobs([job]) == 0
    assert job_rows(queue) == []


def test_delete_jobs_keeping_copies_into_the_history(queue: Queue) -> None:
    jobs = store(queue)
    ids = [jobs.insert_job(row(queue)) for _ in range(2)]
    done = claimed(queue, limit=2)
    assert jobs.delete_jobs(done, [Kept(ids[1], 2_000, None, None, None)]) == 2
    assert job_rows(queue) == []
    assert [entry.id for entry in queue.history()] == [ids[1]]


def test_check_history_passes_on_servers_that_keep_history(queue: Queue) -> None:
    store(queue).check_history()  # the test servers all have JSON_TABLE (MySQL: ConfigError if not)


def test_release_jobs_puts_claimed_jobs_back_uncounted(queue: Queue) -> None:
    jobs = store(queue)
    ids = [jobs.insert_job(row(queue)) for _ in range(3)]
    claim = claimed(queue, limit=3)
    assert jobs.release_jobs(claim[1:]) == 2
    assert statuses(queue) == {ids[0]: "processing", ids[1]: "ready", ids[2]: "ready"}
    assert {r["error_count"] for r in job_rows(queue)} == {0}


def test_release_unknown_puts_back_the_jobs_of_a_worker_s_unseen_claims(queue: Queue) -> None:
    jobs = store(queue)
    mine = [jobs.insert_job(row(queue)) for _ in range(2)]
    other_lane = jobs.insert_job(row(queue))  # the same worker name, another claim (--concurrency)
    theirs = jobs.insert_job(row(queue))
    jobs.claim("default", WORKER, TOKEN, 2)
    jobs.claim("default", WORKER, TOKEN3, 1)
    jobs.claim("default", OTHER, TOKEN2, 1)
    assert jobs.release_unknown(WORKER, [TOKEN2, "0" * 32]) == 0  # another worker's token: not ours
    assert jobs.release_unknown(WORKER, [TOKEN, "0" * 32]) == 2
    assert statuses(queue) == {
        mine[0]: "ready",
        mine[1]: "ready",
        other_lane: "processing",
        theirs: "processing",
    }
    assert jobs.release_unknown(WORKER, [TOKEN]) == 0
    assert jobs.release_unknown(WORKER, []) == 0


def test_claim_held_while_the_token_holds_the_job(queue: Queue) -> None:
    jobs = store(queue)
    job_id = jobs.insert_job(row(queue))
    assert jobs.claim_held(job_id, TOKEN) is False  # not claimed
    [job] = claimed(queue)
    assert jobs.claim_held(job_id, TOKEN) is True
    assert jobs.claim_held(job_id, TOKEN2) is False
    jobs.release_jobs([job])
    assert jobs.claim_held(job_id, TOKEN) is False


def test_error_counts_a_try_and_fails_the_job_out_of_tries(queue: Queue) -> None:
    jobs = store(queue)
    job_id = jobs.insert_job(row(queue, max_errors=2))
    [job] = claimed(queue)
    assert jobs.error(error_params(job)) == 1
    assert jobs.error(error_params(job)) == 0  # its claim is over: fenced
    [state] = job_rows(queue)
    assert (state["status"], state["error_count"], state["last_error"]) == ("ready", 1, "ValueError: no")
    [job] = claimed(queue)
    assert jobs.error(error_params(job, error="ValueError: again")) == 1
    [state] = job_rows(queue)
    assert (state["id"], state["status"], state["error_count"]) == (job_id, "failed", 2)


def test_snooze_puts_a_job_back_uncounted_until_its_limit(queue: Queue) -> None:
    jobs = store(queue)
    job_id = jobs.insert_job(row(queue))
    [job] = claimed(queue)
    assert jobs.snooze(job.id, job.claim_token, 0, 1) is True
    [state] = job_rows(queue)
    assert (state["status"], state["error_count"]) == ("ready", 0)
    assert jobs.snooze(job.id, job.claim_token, 0, 1) is False  # no longer this claim's
    [job] = claimed(queue)
    assert jobs.snooze(job_id, job.claim_token, 0, 1) is False  # snoozed once already
    assert statuses(queue) == {job_id: "processing"}


def test_wait_for_version_puts_a_job_back_for_later_with_a_note(queue: Queue) -> None:
    jobs = store(queue)
    job_id = jobs.insert_job(row(queue))
    [job] = claimed(queue)
    assert jobs.wait_for_version(job.id, TOKEN2, "knows 1", 60, 120, 1.0) == 0  # another claim's
    assert jobs.wait_for_version(job.id, job.claim_token, "knows 1", 60, 120, 1.0) == 1
    assert statuses(queue) == {job_id: "scheduled"}
    assert claimed(queue) == []  # not due for a minute
    [stats] = queue.stats()
    assert (stats.delayed, stats.waiting_for_version) == (1, 1)


def test_progress_is_written_only_while_the_claim_holds(queue: Queue) -> None:
    jobs = store(queue)
    jobs.insert_job(row(queue))
    [job] = claimed(queue)
    assert jobs.progress(job.id, job.claim_token, 0.5, "halfway") is True
    assert jobs.progress(job.id, TOKEN2, 0.7, "zombie") is False
    [info] = [w for w in queue.backend.stores.jobs.processing() if w["id"] == job.id]
    assert info["locked_by"] == WORKER


def test_trace_context_reads_what_enqueue_stored(queue: Queue) -> None:
    jobs = store(queue)
    context = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    traced = jobs.insert_job({**row(queue), "trace_context": context})
    plain = jobs.insert_job(row(queue))
    assert jobs.trace_context(traced) == context
    assert jobs.trace_context(plain) is None
    assert jobs.trace_context(plain + 1000) is None  # no such job


# -- the worker's tick --------------------------------------------------------------------


def test_promote_due_makes_due_scheduled_jobs_ready(queue: Queue) -> None:
    jobs = store(queue)
    job_id = jobs.insert_job(row(queue, delay=3600))
    assert statuses(queue) == {job_id: "scheduled"}
    assert jobs.promote_due() == 0
    assert jobs.make_due("default", None) == 1
    assert jobs.promote_due() == 1
    assert statuses(queue) == {job_id: "ready"}


def test_expire_due_fails_waiting_jobs_past_their_expiry(queue: Queue) -> None:
    jobs = store(queue)
    assert jobs.expire_due() == 0  # nothing expires: one look
    lasting = jobs.insert_job(row(queue, expires=3600))
    expiring = jobs.insert_job(row(queue, expires=3600))
    run_query(queue, "job_expired", {"id": expiring})
    assert jobs.expire_due() == 1
    assert statuses(queue) == {lasting: "ready", expiring: "failed"}
    [failed] = jobs.failed()
    assert failed["id"] == expiring and "expired" in str(failed["last_error"]).lower()
    assert jobs.expire_due(keep_all=True) == 0
    assert jobs.expiring_query in queue.backend.queries


def test_expire_due_keeps_the_expired_job_when_asked(queue: Queue) -> None:
    jobs = store(queue)
    expiring = jobs.insert_job(row(queue, expires=3600))
    run_query(queue, "job_expired", {"id": expiring})
    assert jobs.expire_due(keep_all=True) == 1
    [entry] = queue.history()
    assert (entry.id, entry.outcome) == (expiring, "failed")
    assert entry.error is not None and "expired" in entry.error.lower()


def test_unblock_due_admits_keyed_jobs_up_to_their_limit(queue: Queue) -> None:
    jobs = store(queue)
    keyed = [jobs.insert_job(row(queue, concurrency_key="k", concurrency_limit=2)) for _ in range(3)]
    assert set(statuses(queue).values()) == {"blocked"}
    assert jobs.unblock_due() == 2
    assert [statuses(queue)[i] for i in keyed] == ["ready", "ready", "blocked"]
    assert jobs.unblock_due() == 0


# -- sweeps and operators -----------------------------------------------------------------


def test_processing_lists_claimed_jobs_with_owner_and_age(queue: Queue) -> None:
    jobs = store(queue)
    assert jobs.processing() == []
    job_id = jobs.insert_job(row(queue))
    jobs.insert_job(row(queue))
    claimed(queue)
    [found] = jobs.processing()
    assert (found["id"], found["locked_by"], found["claim_token"]) == (job_id, WORKER, TOKEN)
    assert found["age_seconds"] is not None and float(found["age_seconds"]) >= 0


def test_unrunnable_lists_nothing_for_jobs_enqueued_by_batchq(queue: Queue) -> None:
    store(queue).insert_job(row(queue))
    assert store(queue).unrunnable() == []


def test_failed_and_requeue_failed(queue: Queue) -> None:
    jobs = store(queue)
    job_id = jobs.insert_job(row(queue, max_errors=1))
    assert jobs.failed() == []
    [job] = claimed(queue)
    jobs.error(error_params(job))
    [failed] = jobs.failed()
    assert (failed["id"], failed["error_count"], failed["last_error"]) == (job_id, 1, "ValueError: no")
    assert jobs.requeue_failed(job_id) == 1
    assert (statuses(queue), jobs.failed()) == ({job_id: "ready"}, [])
    assert jobs.requeue_failed(job_id + 1000) == 0  # gone


def test_failed_one_reads_one_failed_job_by_its_id(queue: Queue) -> None:
    jobs = store(queue)
    waiting = jobs.insert_job(row(queue))
    failing = jobs.insert_job(row(queue, max_errors=1, priority=5))
    [job] = claimed(queue)
    jobs.error(error_params(job))
    assert jobs.failed_one(waiting) is None and jobs.failed_one(failing + 1000) is None
    found = jobs.failed_one(failing)
    assert found is not None and (found["id"], found["last_error"]) == (failing, "ValueError: no")
    assert dict(found) == dict(jobs.failed()[0])  # the row gc-error lists


def test_run_now_makes_only_a_delayed_job_due(queue: Queue) -> None:
    jobs = store(queue)
    delayed = jobs.insert_job(row(queue, delay=3600))
    ready = jobs.insert_job(row(queue))
    assert not jobs.run_now(ready) and not jobs.run_now(delayed + 1000)
    assert jobs.run_now(delayed)
    assert statuses(queue) == {delayed: "ready", ready: "ready"}
    assert {job.id for job in claimed(queue, limit=2)} == {delayed, ready}  # both due: claimed


def test_requeue_abandoned_puts_a_dead_workers_job_back_counted(queue: Queue) -> None:
    jobs = store(queue)
    job_id = jobs.insert_job(row(queue, max_errors=2))
    [job] = claimed(queue)
    assert jobs.requeue_abandoned(job_id, TOKEN2, "worker died", "w" * 16) == 0  # another claim's
    assert jobs.requeue_abandoned(job_id, job.claim_token, "worker died", "w" * 16) == 1
    [state] = job_rows(queue)
    assert (state["status"], state["error_count"], state["last_error"]) == ("ready", 1, "worker died")
    assert jobs.requeue_abandoned(job_id, job.claim_token, "worker died", "w" * 16) == 0  # once
    [job] = claimed(queue)
    assert jobs.requeue_abandoned(job_id, job.claim_token, "worker died", "w" * 16) == 1
    assert statuses(queue) == {job_id: "failed"}  # out of tries


def test_delete_failed_deletes_only_a_failed_job(queue: Queue) -> None:
    jobs = store(queue)
    waiting = jobs.insert_job(row(queue))
    failing = jobs.insert_job(row(queue, max_errors=1, priority=5))
    [job] = claimed(queue)
    jobs.error(error_params(job))
    assert jobs.delete_failed(waiting) == 0
    assert jobs.delete_failed(failing) == 1
    assert statuses(queue) == {waiting: "ready"}


def test_requeue_failed_refuses_a_key_another_job_took(queue: Queue) -> None:
    jobs = store(queue)
    job_id = jobs.insert_unique({**row(queue, max_errors=1), "unique_key": "k"})
    assert job_id is not None
    [job] = claimed(queue)
    jobs.error(error_params(job))
    taker = jobs.insert_unique({**row(queue), "unique_key": "k"})  # a failed job frees its key
    assert taker is not None
    with pytest.raises(DuplicateKey):
        jobs.requeue_failed(job_id)


def test_cancel_deletes_an_unclaimed_job_and_keep_cancelled_keeps_it(queue: Queue) -> None:
    jobs = store(queue)
    plain = jobs.insert_job(row(queue))
    kept = jobs.insert_job(row(queue, keep_result=True))
    running = jobs.insert_job(row(queue, priority=9))
    claimed(queue)  # the running one, first by priority
    assert jobs.keep_cancelled(plain) == 0  # keeps no result
    assert jobs.cancel(plain) == 1
    assert jobs.keep_cancelled(kept) == 1
    assert jobs.cancel(kept) == 1
    assert jobs.cancel(running) == 0  # claimed: stays
    assert statuses(queue) == {running: "processing"}
    assert [(entry.id, entry.outcome) for entry in queue.history()] == [(kept, "cancelled")]


def test_cancel_where_deletes_waiting_jobs_in_batches(queue: Queue) -> None:
    jobs = store(queue)
    ids = [jobs.insert_job(row(queue)) for _ in range(5)]
    other_task = jobs.insert_job({**row(queue), "task": "jobs:other"})
    mail = jobs.insert_job(row(queue, queue="mail"))
    run_query(queue, "job_make_old", {"id": ids[0]})
    assert jobs.cancel_where("default", None, 1800, 10) == 1  # older than half an hour
    assert jobs.cancel_where("default", "jobs:noop", 0, 2) == 2  # at most one batch
    assert jobs.cancel_where("default", "jobs:noop", 0, 10) == 2
    assert set(statuses(queue)) == {other_task, mail}


def test_history_filters(queue: Queue) -> None:
    jobs = store(queue)
    ids = [jobs.insert_job(row(queue)) for _ in range(2)] + [jobs.insert_job(row(queue, queue="mail"))]
    done = claimed(queue, limit=2) + claimed(queue, queue_name="mail")
    jobs.delete_jobs(done, [Kept(job.id, 1_000, None, None, None) for job in done])
    every = {"queue": None, "task": None, "since": None, "outcome": None, "job_id": None, "limit": 10}
    assert [r["id"] for r in jobs.history(**every)] == sorted(ids, reverse=True)  # newest first
    assert [r["id"] for r in jobs.history(**{**every, "queue": "mail"})] == [ids[2]]
    assert [r["id"] for r in jobs.history(**{**every, "job_id": ids[0]})] == [ids[0]]
    assert jobs.history(**{**every, "outcome": "failed"}) == []
    assert len(jobs.history(**{**every, "limit": 1})) == 1


def test_prune_history_deletes_old_records_in_batches(queue: Queue) -> None:
    jobs = store(queue)
    ids = [jobs.insert_job(row(queue)) for _ in range(3)] + [jobs.insert_job(row(queue, queue="mail"))]
    done = claimed(queue, limit=3) + claimed(queue, queue_name="mail")
    jobs.delete_jobs(done, [Kept(job.id, 1_000, None, None, None) for job in done])
    for job_id in ids:
        run_query(queue, "history_age", {"id": job_id, "seconds": 7200})
    assert jobs.prune_history("mail", 3600, 10, False) == 1
    assert jobs.prune_history(None, 3600, 2, False) == 2  # one batch
    assert jobs.prune_history(None, 3600 * 3, 10, False) == 0  # not that old
    assert jobs.prune_history(None, 3600, 10, False) == 1
    assert queue.history() == []


def test_call_of_reads_a_jobs_task_and_payload(queue: Queue) -> None:
    jobs = store(queue)
    job_id = jobs.insert_job(row(queue, {"x": 1}))
    found = jobs.call_of(job_id)
    assert found is not None and found["task"] == "jobs:noop" and found["serializer"] == "json"
    assert jobs.call_of(job_id + 1000) is None


# -- the job queues' rows and counts ------------------------------------------------------


def test_queue_counts_per_queue_and_status(queue: Queue) -> None:
    jobs = store(queue)
    for _ in range(2):
        jobs.insert_job(row(queue))
    jobs.insert_job(row(queue, queue="mail"))
    claimed(queue)
    counts = {(r["queue"], r["status"]): (int(r["jobs"]), int(r["due"] or 0)) for r in jobs.queue_counts()}
    assert counts == {
        ("default", "ready"): (1, 1),
        ("default", "processing"): (1, 1),
        ("mail", "ready"): (1, 1),
    }


def test_pausing_and_resuming_a_queue(queue: Queue) -> None:
    jobs = store(queue)
    assert (jobs.paused_queues(), jobs.paused_names()) == ([], set())
    jobs.set_paused("mail", True)
    jobs.set_paused("bulk", True)
    assert (jobs.paused_queues(), jobs.paused_names()) == (["bulk", "mail"], {"bulk", "mail"})
    jobs.set_paused("mail", False)
    assert jobs.paused_queues() == ["bulk"]


def test_keep_for_per_queue(queue: Queue) -> None:
    jobs = store(queue)
    assert (jobs.keep_for(), jobs.keeping_queues()) == ({}, set())
    jobs.set_keep_for("mail", 3600)
    jobs.set_keep_for("bulk", 60.5)
    assert jobs.keep_for() == {"bulk": 60.5, "mail": 3600.0}
    assert jobs.keeping_queues() == {"bulk", "mail"}
    jobs.set_keep_for("mail", None)
    assert jobs.keep_for() == {"bulk": 60.5}


def test_queue_schema_stored_and_read(queue: Queue) -> None:
    jobs = store(queue)
    assert jobs.queue_schema("typed") is None
    jobs.set_queue_schema("typed", '{"type": "object"}')
    assert jobs.queue_schema("typed") == '{"type": "object"}'
    jobs.set_queue_schema("typed", None)
    assert jobs.queue_schema("typed") is None


def test_queue_exists_and_purge(queue: Queue) -> None:
    jobs = store(queue)
    assert jobs.queue_exists("default") is False
    ready = jobs.insert_job(row(queue))
    running = jobs.insert_job(row(queue, priority=9))
    claimed(queue)
    assert jobs.queue_exists("default") is True
    jobs.set_paused("settings-only", True)
    assert jobs.queue_exists("settings-only") is True
    assert jobs.purge("default") == 1
    assert statuses(queue) == {running: "processing"}
    assert ready not in statuses(queue)


# -- batchq.testing -----------------------------------------------------------------------


def test_testing_jobs_and_make_due(queue: Queue) -> None:
    jobs = store(queue)
    now = jobs.insert_job(row(queue))
    later = jobs.insert_job(row(queue, delay=3600))
    mail = jobs.insert_job(row(queue, queue="mail", delay=60))
    found = jobs.testing_jobs("default", None, 10)
    assert [r["id"] for r in found] == [now, later]
    assert float(found[1]["due_in"]) > 3000
    assert [r["id"] for r in jobs.testing_jobs(None, "jobs:noop", 2)] == [now, later]
    assert jobs.make_due("mail", 30) == 0  # not due within 30 s
    assert jobs.make_due("mail", 120) == 1
    assert jobs.make_due("default", None) == 1  # the one not due yet
    assert all(float(r["due_in"]) <= 0.5 for r in jobs.testing_jobs(None, None, 10))
    assert sql(queue, f"SELECT COUNT(*) FROM batchq_job WHERE id = {mail}") == [(1,)]
