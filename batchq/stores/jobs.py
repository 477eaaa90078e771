"""The job table's operations: enqueue, claim, finish, sweep, and the job queues' own rows.

Statements in ``sql/<dialect>/jobs.sql`` (and the feature files beside it: results, history,
control, progress, telemetry, testing, django). The claim and the bulk enqueue are each
dialect's own, moved here from the backends unchanged (their SQL, byte for byte, is tuned for
speed): PostgreSQL claims in one statement (PostgreSQLJobStore), SQLite takes the write lock
first and claims with UPDATE ... RETURNING (SQLiteJobStore), MySQL locks, then marks, in two
round trips, and builds its INSERTs as they go on the wire (MySQLJobStore). The connection's
pieces (cursors, statement sizes, transactions, retries) stay on the backend, which each
method calls.

This module imports the backends (their row and wire helpers), and the backends import the
stores: batchq.stores.Stores imports it on first use, once a backend exists.
"""

from __future__ import annotations

import functools
import operator
import re
import sqlite3
import weakref
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from ..backends.errors import NotUTF8, TransientError
from ..backends.mysql_drivers import Driver, driver_of
from ..backends.mysql_statements import (
    MULTI_ROW_STATEMENT_BYTES,
    VALUES,
    check_statement_size,
    chunks,
    supports_skip_locked,
)
from ..core.config import counted
from ..core.job import Claim, Job, Kept, done_params, job_ids, kept_document
from ..core.stored import Row, stored_text
from ..errors import ConfigError, JobExpired
from .base import Store

if TYPE_CHECKING:
    from ..backends.mysql import MySQLBackend
    from ..backends.postgresql import PostgreSQLBackend
    from ..backends.sqlite import SQLiteBackend

# Stands for the payload while the rest of an enqueue_many row is escaped once: no queue or task
# name can hold a space or '<', so its quoted form occurs nowhere else in the row.
_PAYLOAD_MARK = "<batchq payload>"
# enqueue_many's rows per INSERT: 100 rows per statement already take most of the per-statement
# cost away; more only makes the statement (compiled once per size, cached by sqlite3) bigger.
ROWS_PER_INSERT = 500
# SQLITE_MAX_VARIABLE_NUMBER's default: 32766 since 3.32, 999 before (getlimit() needs Python 3.11).
DEFAULT_MAX_VARIABLES = 32766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999
_NAMED = re.compile(r":([A-Za-z_]\w*)")


# fail_for_good's ways a job ends failed, and their statements.
ForGood = Literal["last_try", "discard", "invalid"]
_FOR_GOOD: dict[ForGood, str] = {
    "last_try": "job_error",
    "discard": "job_discard",
    "invalid": "job_fail_invalid",
}


class JobStore(Store):
    """Jobs: rows of ``batchq_job`` (and what a job leaves in ``batchq_history``), and the job
    queues' settings rows (``batchq_queue``) that enqueue, the worker and the sweeps read."""

    # -- enqueue --------------------------------------------------------------------------

    def insert_job(self, row: dict[str, Any], conn: Any = None) -> int:
        """enqueue: one job row (no unique key), the new job's id."""
        return self.db.insert(enqueue_statement("enqueue", row), row, conn)

    def insert_jobs(
        self, template: dict[str, Any], payloads: Sequence[bytes | None], conn: Any = None
    ) -> int:
        """enqueue_many: one job of ``template`` per payload, all or none, in as few statements
        as the dialect allows; on ``conn``, inside the caller's transaction."""
        rows = [{**template, "payload": payload} for payload in payloads]
        statement = enqueue_statement("enqueue", template)
        if conn is not None:
            return self.db.insert_many(statement, rows, conn)
        with self.db.transaction():
            return self.db.insert_many(statement, rows)

    def insert_unique(self, row: dict[str, Any], conn: Any = None) -> int | None:
        """enqueue_unique: the new job's id, or None (nothing written) if a job holds its key."""
        return self.db._query("enqueue_unique", row, conn, self._unique_inserted)

    def _unique_inserted(self, cur: Any) -> int | None:
        return int(cur.lastrowid) if cur.rowcount == 1 else None

    def unique_holder(self, key: str, conn: Any = None) -> int | None:
        """The id of the waiting or running job holding a unique key, if any (on ``conn``: as
        the caller's transaction sees it)."""
        row = self.db.fetchone("job_unique_holder", {"unique_key": key}, conn)
        return None if row is None else int(row["id"])

    def insert_unique_jobs(self, rows: Sequence[dict[str, Any]], conn: Any = None) -> int:
        """enqueue_many with unique keys: the rows whose key is free, all in one transaction (on
        ``conn``, the caller's); returns how many were written."""
        if conn is not None:
            return self.db.count_inserted("enqueue_unique", rows, conn)
        with self.db.transaction():
            return self.db.count_inserted("enqueue_unique", rows)

    # -- the job cycle --------------------------------------------------------------------

    def claim(
        self,
        queue: str,
        worker: str,
        token: str,
        limit: int = 1,
        done: Sequence[Job] = (),
        partition: int | None = None,
        kept: Sequence[Kept] | None = None,
    ) -> Claim:
        """In one transaction: delete the jobs ``done`` (finished by this worker, fenced by their
        claim's token) and claim up to ``limit`` due jobs of ``queue``, in the claim index's
        order (priority, then due time, then id), marked ours with ``token``. With ``kept`` (the
        measurements of some of ``done``, batchq.jobs.history.Meter.kept), those jobs are first copied
        into batchq_history, in the same transaction.

        Every 'ready' row is due (jobs_promote moves 'scheduled' ones once their time comes), so
        a claim takes the first unlocked rows of the claim index: it never walks the backlog.
        With ``partition``, only jobs of that partition, which the worker leases
        (batchq.coordination.partitions); such a claim is never given ``kept``: the worker deletes
        the jobs it keeps first.

        Each dialect claims its own way (a variant each).
        """
        raise NotImplementedError(f"no claim for {self.db.dialect}")

    def delete_jobs(self, jobs: Sequence[Job], kept: Sequence[Kept] | None = None) -> int:
        """Delete finished jobs when no claim follows (with ``kept``: copied into the history
        first, as claim() does); returns how many matched their token."""
        if kept is not None:
            return self._delete_keeping(jobs, kept)
        return self.db.execute("jobs_delete", {"token": jobs[0].claim_token, "ids": job_ids(jobs)})

    def _delete_keeping(self, jobs: Sequence[Job], kept: Sequence[Kept]) -> int:
        """jobs_delete_keep: copy into the history and delete, in one statement."""
        row = self.db.fetchone("jobs_delete_keep", {**done_params(jobs), "kept": kept_document(kept)})
        return int(row["deleted"]) if row else 0

    def check_history(self) -> None:
        """Raise ConfigError where this server cannot keep history (old MySQL: no JSON_TABLE)."""

    def release_jobs(self, jobs: Sequence[Job]) -> int:
        """Put back claimed jobs this worker will not run, uncounted."""
        return self.db.execute("jobs_release", {"token": jobs[0].claim_token, "ids": job_ids(jobs)})

    def release_unknown(self, worker: str, tokens: Sequence[str]) -> int:
        """Put back, uncounted, the jobs ``worker`` holds under ``tokens``: claims it may have
        committed without seeing them (a lost connection); returns how many."""
        if not tokens:
            return 0
        return self.db.execute("jobs_release_unknown", {"worker": worker, "tokens": list(tokens)})

    def claim_held(self, job_id: int, token: str | None) -> bool:
        """Is the job still the claim of ``token`` (a plain read, no row lock)?"""
        return self.db.fetchone("job_claim_held", {"id": job_id, "token": token}) is not None

    def error(self, params: dict[str, Any]) -> int:
        """job_error: count a failed try and push the job back (or fail it when out of tries),
        fenced by its token; the rows matched (0: taken back). ``params``: id, token, error,
        error_class, fingerprint, delay (seconds) and the try's measurements (Usage.row_params),
        the shape fail_for_good takes too."""
        return self.db.execute("job_error", params)

    def waiting_payloads(self, queue: str, after: int, limit: int) -> list[Row]:
        """Up to ``limit`` of the queue's waiting jobs (id, payload, serializer) past id
        ``after``, by id: a page of the check of a new type (batchq.policy.typed.count_mismatched)."""
        return self.db.fetchall("queue_waiting_payloads", {"queue": queue, "after": after, "limit": limit})

    def fail_for_good(self, how: ForGood, params: dict[str, Any], keep: bool) -> int:
        """A job's last failure, fenced by its token: its last try counted (``how`` "last_try":
        ``params`` as ``error`` takes them), discarded by its task ("discard": the same), or
        its payload refused ("invalid": id, token, error, fingerprint); with its history record
        when ``keep``, and the failure of its waiting dependants, in one transaction, retried on
        deadlocks. The rows matched (0: taken back)."""
        query, db = _FOR_GOOD[how], self.db

        def fail() -> int:
            with db.transaction():
                matched = db.execute(query, params)
                if matched:
                    if keep:
                        db.execute("job_keep_failed", {"id": params["id"]})
                    db.stores.dependencies.fail_dependants([params["id"]])
                return matched

        return db.retrying(fail)

    def snooze(self, job_id: int, token: str | None, delay: float, max_snoozes: int | None) -> bool:
        """Put a claimed job back for ``delay`` seconds, uncounted (batchq.jobs.control); False when it
        has snoozed ``max_snoozes`` times already or is no longer this claim's."""
        params = {"id": job_id, "token": token, "delay": delay, "max_snoozes": max_snoozes}
        return bool(self.db.execute("job_snooze", params))

    def wait_for_version(
        self, job_id: int, token: str | None, note: str, min_delay: float, max_delay: float, spread: float
    ) -> int:
        """Put back a job of a task version this worker does not know, uncounted, with ``note``
        (batchq.jobs.tasks), due again between ``min_delay`` and ``max_delay`` seconds (times
        ``spread``); the rows matched (0: no longer this claim's)."""
        params = {
            "id": job_id,
            "token": token,
            "note": note,
            "min_delay": min_delay,
            "max_delay": max_delay,
            "spread": spread,
        }
        return self.db.execute("job_wait_for_version", params)

    def progress(self, job_id: int, token: str | None, fraction: float | None, message: str | None) -> bool:
        """A running job's latest progress report, while its try holds the claim; False when
        that claim is gone (taken back)."""
        params = {"id": job_id, "token": token, "fraction": fraction, "message": message}
        return bool(self.db.execute("job_progress", params))

    def trace_context(self, job_id: int) -> Any:
        """The trace context stored with a job at enqueue, as stored (None: none, or no job)."""
        row = self.db.fetchone("job_trace_context", {"id": job_id})
        return None if row is None else row["trace_context"]

    # -- the worker's tick ----------------------------------------------------------------

    def promote_due(self) -> int:
        """Make scheduled jobs whose time has come ready; returns how many."""
        return self.db.execute("jobs_promote")

    def expire_due(self, keep_all: bool = False) -> int:
        """Fail waiting jobs past their expiry as 'expired' (batchq.errors.JobExpired), copying
        those whose history is kept (``keep_all``: `run --keep`); returns how many. One cheap
        look first (jobs_expired_any walks an index of the jobs with an expiry only), so a
        database without expiring jobs pays one read per tick and no lock."""
        db = self.db
        if db.fetchone("jobs_expired_any") is None:
            return 0
        from ..core.failures import fingerprint_of

        params: dict[str, Any] = {
            "error_class": f"{JobExpired.__module__}.{JobExpired.__qualname__}",
            "fingerprint": fingerprint_of(JobExpired.__name__, "expired"),
        }
        with db.transaction():
            params["ids"] = [found[0] for found in db.rows(self.expiring_query)]
            if not params["ids"]:
                return 0
            expired = db.execute("jobs_expire", params)
            db.execute("jobs_keep_expired", {"ids": params["ids"], "keep_all": int(keep_all)})
            db.stores.dependencies.fail_dependants(
                params["ids"], "expired"
            )  # a job that waits for one never runs
        return expired

    @property
    def expiring_query(self) -> str:
        """The query that finds and locks expired waiting jobs (MySQL: without SKIP LOCKED on
        servers that lack it)."""
        return "jobs_expiring"

    def unblock_due(self) -> int:
        """Jobs waiting for a slot of their concurrency key get one where it is free; returns how
        many became ready. One worker at a time: the others skip, the holder admits for them."""
        db = self.db
        locked, admitted = False, 0
        try:
            with db.transaction():
                row = db.fetchone("jobs_unblock_lock")
                locked = bool(row and row["locked"])
                ids = [found[0] for found in db.rows("jobs_unblockable")] if locked else []
                if ids:
                    admitted = db.execute("jobs_unblock", {"ids": ids})
        finally:
            if locked:  # MySQL's lock outlives the transaction: let go only after the commit
                db.fetchone("jobs_unblock_unlock")
        return admitted

    # -- sweeps and operators -------------------------------------------------------------

    def processing(self) -> list[Row]:
        """Every claimed job, with its owner and age (gc-processing's rows, StuckJob.from_row)."""
        return self.db.fetchall("jobs_processing")

    def unrunnable(self) -> list[Row]:
        """Waiting jobs that can never run as they are (gc-processing reports them)."""
        return self.db.fetchall("jobs_unrunnable")

    def failed(self) -> list[Row]:
        """Every failed job (gc-error's rows, FailedJob.from_row)."""
        return self.db.fetchall("jobs_failed")

    def requeue_abandoned(self, job_id: int, token: str | None, error: str, fingerprint: str) -> int:
        """A dead worker's job goes back at once, counted as an error (failed when out of
        tries), fenced by its claim's token; retried on deadlocks. The rows changed (0: its
        worker finished it, or another sweep took it back, first)."""
        params = {"id": job_id, "token": token, "error": error, "fingerprint": fingerprint}
        return self.db.retrying(lambda: self.db.execute("job_requeue_abandoned", params))

    def failed_one(self, job_id: int) -> Row | None:
        """One failed job as ``failed`` lists it, by its primary key (a dashboard's retry reads
        it so, not with every failed job); None if it is not failed."""
        return self.db.fetchone("job_failed_one", {"id": job_id})

    def run_now(self, job_id: int) -> bool:
        """Make a delayed job (scheduled: a delay or a retry backoff) due now, retried on
        deadlocks; False if it is in another state or waits for its parents."""
        return self.db.retrying(lambda: self.db.execute("job_run_now", {"id": job_id})) == 1

    def delete_failed(self, job_id: int) -> int:
        """Delete a failed job (gc-error --delete), retried on deadlocks; the rows deleted."""
        return self.db.retrying(lambda: self.db.execute("job_delete_failed", {"id": job_id}))

    def requeue_failed(self, job_id: int) -> int:
        """A failed job gets a fresh set of tries, due now; the rows changed (0: gone). Raises
        DuplicateKey when another job has taken its unique key since."""
        return self.db.execute("job_requeue_failed", {"id": job_id})

    def keep_cancelled(self, job_id: int) -> int:
        """Queue.cancel, in its transaction before cancel(): a waiting job that keeps its result
        is copied into the history as cancelled; how many were."""
        return self.db.execute("job_keep_cancelled", {"id": job_id})

    def cancel(self, job_id: int) -> int:
        """Delete a job nobody is running; how many were (a claimed job stays)."""
        return self.db.execute("job_cancel", {"id": job_id})

    def cancel_where(self, queue: str, task: str | None, older_than: float, batch: int) -> int:
        """Delete up to ``batch`` waiting jobs of ``queue`` (of ``task`` when given, enqueued at
        least ``older_than`` seconds ago), retried on deadlocks; how many."""
        params = {"queue": queue, "task": task, "older_than": older_than, "batch": batch}
        return self.db.retrying(lambda: self.db.execute("jobs_cancel_where", params))

    def history(
        self,
        *,
        queue: str | None,
        task: str | None,
        since: float | None,
        outcome: str | None,
        job_id: int | None,
        limit: int,
    ) -> list[Row]:
        """Finished jobs kept in the history, newest first, filtered by each argument given
        (``since``: finished within that many seconds; ``outcome``: succeeded or failed)."""
        filters = {
            "queue": queue,
            "task": task,
            "since": since,
            "outcome": outcome,
            "job_id": job_id,
            "limit": limit,
        }
        return self.db.fetchall("history_list", filters)

    def prune_history(self, queue: str | None, older_than: float, batch: int, spare: bool) -> int:
        """Delete up to ``batch`` history records finished more than ``older_than`` seconds ago
        (of ``queue``; every queue's when None), but with ``spare`` those whose own keep_result
        has not run out; one statement, retried on deadlocks. How many."""
        name = "history_prune" if queue is None else "history_prune_queue"
        params = {"queue": queue, "older_than": older_than, "batch": batch, "spare": spare}
        return self.db.retrying(lambda: self.db.execute(name, params))

    def result_rows(self, job_id: int) -> list[Row]:
        """A job's row in the job table and its kept record, each with its ``source`` ("job",
        "history"), as batchq.jobs.results reads a result; retried on deadlocks."""
        return self.db.retrying(lambda: self.db.fetchall("result_read", {"id": job_id}))

    def prune_expired_results(self, batch: int) -> int:
        """Delete up to ``batch`` kept records whose keep_result ran out; one statement, retried
        on deadlocks. How many."""
        return self.db.retrying(lambda: self.db.execute("results_prune_expired", {"batch": batch}))

    def clear_for_tests(self) -> None:
        """The pytest plugin's fresh start on a server's test database: every job, queue setting
        and kept record of earlier tests deleted."""
        for name in ("testing_clear", "testing_clear_queues", "testing_clear_history"):
            self.db.execute(name)

    def call_of(self, job_id: int) -> Row | None:
        """What a job calls (task, payload, serializer), from its row or its kept record; None
        when neither exists. Retried on deadlocks."""
        return self.db.retrying(lambda: self.db.fetchone("django_job_call", {"id": job_id}))

    # -- the job queues' rows (batchq_queue) and counts -----------------------------------

    def queue_counts(self) -> list[Row]:
        """Jobs per queue and status, with how many are due and the oldest claim's age."""
        return self.db.fetchall("queue_stats")

    def set_paused(self, queue: str, paused: bool) -> None:
        """Pause (workers claim nothing from it) or resume a job queue."""
        self.db.execute("queue_set_paused", {"queue": queue, "paused": int(paused)})

    def paused_queues(self) -> list[str]:
        """The names of the paused job queues, by name."""
        rows = self.db.fetchall("queues_paused")
        return [stored_text(row["name"]) for row in rows if row["name"] is not None]  # NULL: by hand

    def paused_names(self) -> set[Any]:
        """The names of the paused job queues as stored (the worker's tick compares them with
        the queues it runs, a value written by hand as it is)."""
        return {row["name"] for row in self.db.fetchall("queues_paused")}

    def set_keep_for(self, queue: str, seconds: float | None) -> None:
        """Keep a queue's finished jobs in the history for ``seconds`` (None: not at all)."""
        self.db.execute("queue_set_keep_for", {"queue": queue, "keep_for": seconds})

    def keep_for(self) -> dict[str, float]:
        """The queues whose history is kept, and for how many seconds."""
        return {row["name"]: float(row["keep_for"]) for row in self.db.fetchall("queues_keep_for")}

    def keeping_queues(self) -> set[Any]:
        """The names of the queues whose history is kept (as stored: the worker's tick reads
        them without judging a value written by hand)."""
        return {row["name"] for row in self.db.fetchall("queues_keep_for")}

    def queue_schema(self, queue: str, conn: Any = None) -> Any:
        """A job queue's type as stored (its JSON Schema's text; None: untyped), on ``conn``
        when given."""
        row = self.db.fetchone("queue_schema", {"queue": queue}, conn=conn)
        return None if row is None else row["payload_schema"]

    def set_queue_schema(self, queue: str, schema: str | None) -> None:
        """Store a job queue's type (None: untyped), retried on deadlocks."""
        self.db.retrying(lambda: self.db.execute("queue_set_schema", {"queue": queue, "schema": schema}))

    def queue_exists(self, queue: str) -> bool:
        """Does a job queue of this name exist (jobs, or its settings row)?"""
        row = self.db.fetchone("queue_exists", {"queue": queue})
        return bool(row and row["present"])

    def purge(self, queue: str) -> int:
        """Delete a queue's jobs that nobody is running; how many."""
        return self.db.execute("queue_purge", {"queue": queue})

    # -- batchq.testing -------------------------------------------------------------------

    def testing_jobs(self, queue: str | None, task: str | None, limit: int) -> list[Row]:
        """Every job row (of ``queue`` and ``task`` when given), oldest first, with the seconds
        until it is due (assertions' rows)."""
        return self.db.fetchall("testing_jobs", {"queue": queue, "task": task, "limit": limit})

    def make_due(self, queue: str, within: float | None) -> int:
        """A queue's waiting jobs due within ``within`` seconds (every one: None) become due now."""
        return self.db.execute("testing_make_due", {"queue": queue, "within": within})


class PostgreSQLJobStore(JobStore, dialect="postgresql"):
    db: PostgreSQLBackend

    def insert_jobs(
        self, template: dict[str, Any], payloads: Sequence[bytes | None], conn: Any = None
    ) -> int:
        """One statement for the whole batch: its payloads as one bytea array (enqueue_many)."""
        params = {**template, "payloads": payloads}
        statement = enqueue_statement("enqueue_many", template)
        return self.db._query(statement, params, conn, lambda cur: len(payloads))

    def _unique_inserted(self, cur: Any) -> int | None:
        row = cur.fetchone()  # enqueue_unique returns no row when the key is taken
        return None if row is None else int(row[0])

    def insert_unique_jobs(self, rows: Sequence[dict[str, Any]], conn: Any = None) -> int:
        """One statement: the payloads and their keys as two arrays (enqueue_many_unique)."""
        params = {k: v for k, v in rows[0].items() if k not in ("payload", "unique_key")}
        params["payloads"] = [row["payload"] for row in rows]
        params["unique_keys"] = [row["unique_key"] for row in rows]
        return self.db._query("enqueue_many_unique", params, conn, lambda cur: int(cur.rowcount))

    def claim(
        self,
        queue: str,
        worker: str,
        token: str,
        limit: int = 1,
        done: Sequence[Job] = (),
        partition: int | None = None,
        kept: Sequence[Kept] | None = None,
    ) -> Claim:
        """One statement, one round trip, its own transaction in autocommit: jobs_claim deletes
        what is done (jobs_claim_keep: and copies it into the history), then locks and marks the
        next jobs; its first row carries the count."""
        db = self.db
        params = {"queue": queue, "limit": limit, "worker": worker, "token": token, **done_params(done)}
        params["done_ids"] = _bigint_array(params["done_ids"])
        if partition is not None:
            rows = db.rows("jobs_claim_partition", {**params, "partition": partition})
        elif kept is not None and len(kept) == 1:  # one job: its figures as plain parameters
            rows = db.rows("jobs_claim_keep_one", {**params, **kept[0].params()})
        elif kept is not None:
            rows = db.rows("jobs_claim_keep", {**params, "kept": kept_document(kept)})
        else:
            rows = db.rows("jobs_claim", params)
        jobs = [Job.from_row(row, token) for row in rows if row[0] is not None]
        if jobs:
            db._drop_notifications()
        return Claim(int(rows[0][-1]), jobs)


class SQLiteJobStore(JobStore, dialect="sqlite"):
    db: SQLiteBackend

    def claim(
        self,
        queue: str,
        worker: str,
        token: str,
        limit: int = 1,
        done: Sequence[Job] = (),
        partition: int | None = None,
        kept: Sequence[Kept] | None = None,
    ) -> Claim:
        """BEGIN IMMEDIATE; jobs_keep (what is done and kept); jobs_delete (what is done);
        jobs_claim (UPDATE ... RETURNING); COMMIT.

        The driver decodes the claimed rows' text itself (strict_rows): a Python call per value
        otherwise. A row written by hand with text that is not UTF-8 makes that fail, and the
        claim rolls back whole and runs again decoding leniently. Inside a caller's transaction
        (the limited claim, batchq.stores.flow), which cannot roll back alone: leniently at once.
        """
        args = (queue, worker, token, limit, done, partition, kept)
        if self.db._in_transaction:
            return self._claim(*args, self.db.rows)
        try:
            return self._claim(*args, self.db.strict_rows)
        except NotUTF8:
            return self._claim(*args, self.db.rows)

    def _claim(
        self,
        queue: str,
        worker: str,
        token: str,
        limit: int,
        done: Sequence[Job],
        partition: int | None,
        kept: Sequence[Kept] | None,
        read: Callable[[str, dict[str, Any]], list[tuple[Any, ...]]],
    ) -> Claim:
        params = {"queue": queue, "limit": limit, "worker": worker, "token": token, "partition": partition}
        with self.db.transaction():
            deleted = self.delete_jobs(done, kept) if done else 0
            rows = read("jobs_claim" if partition is None else "jobs_claim_partition", params)
        if len(rows) > 1:
            _sort_claimed(rows)  # RETURNING gives no order
        return Claim(deleted, [Job.from_row(row, token) for row in rows])

    def _delete_keeping(self, jobs: Sequence[Job], kept: Sequence[Kept]) -> int:
        """jobs_keep, then jobs_delete, in one transaction (the claim's, when one follows)."""
        with self.db.transaction():
            self.db.execute("jobs_keep", {**done_params(jobs), "kept": kept_document(kept)})
            return self.delete_jobs(jobs)

    def insert_jobs(
        self, template: dict[str, Any], payloads: Sequence[bytes | None], conn: Any = None
    ) -> int:
        """enqueue_many as multi-row INSERTs (executemany would send one INSERT per row): the
        enqueue statement's VALUES row once per payload, each with its own payload parameter, as
        many rows per statement as SQLite's limit on host parameters allows. One statement is
        atomic by itself; more run in one transaction (on ``conn``: the caller's)."""
        enqueue = self.db.sql(enqueue_statement("enqueue", template))
        per_insert = self._rows_per_insert(enqueue, conn)
        if conn is None and len(payloads) > per_insert:
            with self.db.transaction():
                return self._insertchunks(enqueue, template, payloads, per_insert, None)
        return self._insertchunks(enqueue, template, payloads, per_insert, conn)

    def _insertchunks(
        self,
        enqueue: str,
        template: dict[str, Any],
        payloads: Sequence[bytes | None],
        per_insert: int,
        conn: Any,
    ) -> int:
        with self.db.errors(), self.db._cursor(conn) as cur:
            for start in range(0, len(payloads), per_insert):
                chunk = payloads[start : start + per_insert]
                params = {**template, **{f"p{n}": data for n, data in enumerate(chunk)}}
                cur.execute(_multi_row_insert(enqueue, len(chunk)), params)
        return len(payloads)

    def _rows_per_insert(self, enqueue: str, conn: Any) -> int:
        """Rows per INSERT within the connection's limit on host parameters (the template's
        parameters count once each, whatever the number of rows)."""
        connection = conn if conn is not None else self.db.conn
        which = getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", None)  # Python 3.11+
        limit = DEFAULT_MAX_VARIABLES if which is None else connection.getlimit(which)
        shared = len(set(_NAMED.findall(enqueue)) - {"payload"})
        return max(1, min(ROWS_PER_INSERT, limit - shared))


class MySQLJobStore(JobStore, dialect="mysql"):
    db: MySQLBackend

    def __init__(self, db: MySQLBackend) -> None:
        super().__init__(db)
        # A connection -> (the values but the payload, the enqueue statement around its payload).
        self._enqueue_pieces_known: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def insert_job(self, row: dict[str, Any], conn: Any = None) -> int:
        """enqueue: the statement but its payload escaped once per connection and template (a
        producer enqueues the same task, queue and options again and again: 13 values PyMySQL
        would escape on every call), the payload spliced in, measured as sent."""
        return self.db._on_cursor(conn, functools.partial(self._insert_job, row=row))

    def _insert_job(self, cur: Any, row: dict[str, Any]) -> int:
        connection = cur.connection
        driver = driver_of(connection)
        pieces = self._enqueue_pieces(cur, row, driver)
        if pieces is None:  # mysqlclient; else cannot happen with batchq's own statement
            statement = self.db._fitting(cur, self.db.sql(enqueue_statement("enqueue", row)), row)
        else:
            before, after = pieces
            statement = before + driver.literal(connection, row["payload"]) + after
            check_statement_size(len(statement), self.db._statement_limit(connection))
        cur.execute(statement)
        return int(cur.lastrowid)

    def _enqueue_pieces(self, cur: Any, row: dict[str, Any], driver: Driver) -> tuple[bytes, bytes] | None:
        """The enqueue statement as sent before and after its payload, for this row's other
        values on this connection (escaping depends on its character set and sql_mode): the
        last one made is kept. None where the driver does not tell what escaping depends on
        (mysqlclient): the statement is then built whole."""
        connection = cur.connection
        escaping = driver.escaping(connection)
        if escaping is None:  # what escaping depends on is not known: nothing can be kept
            return None
        # Types too: 1 == 1.0 == True, but they are escaped differently.
        key = (escaping, tuple((type(value), value) for name, value in row.items() if name != "payload"))
        known = self._enqueue_pieces_known.get(connection)
        if known is not None and known[0] == key:
            return known[1]  # type: ignore[no-any-return]
        statement = self.db.sql(enqueue_statement("enqueue", row))
        marked = driver.statement(cur, statement, {**row, "payload": _PAYLOAD_MARK})
        before, mark, after = marked.partition(driver.literal(connection, _PAYLOAD_MARK))
        pieces = (before, after) if mark else None
        self._enqueue_pieces_known[connection] = (key, pieces)
        return pieces

    def insert_unique(self, row: dict[str, Any], conn: Any = None) -> int | None:
        db = self.db
        with db.errors(), db._cursor(conn) as cur:
            cur.execute(db._fitting(cur, db.sql("enqueue_unique"), row))
            return int(cur.lastrowid) if cur.rowcount == 1 else None  # INSERT IGNORE: 0 if taken

    def insert_jobs(
        self, template: dict[str, Any], payloads: Sequence[bytes | None], conn: Any = None
    ) -> int:
        """Rows that differ only in their payload: the rest of the VALUES row is escaped once and
        each payload spliced in, every row measured before anything is sent. One statement (in
        autocommit, atomic by itself) when the batch fits; else chunks in one transaction."""
        db = self.db
        head, row_sql = VALUES.split(db.sql(enqueue_statement("enqueue", template)), maxsplit=1)
        with db.errors(), db._cursor(conn) as cur:
            connection = cur.connection
            driver = driver_of(connection)
            prefix = f"{head} VALUES ".encode(connection.encoding)
            marked_row = driver.statement(cur, row_sql, {**template, "payload": _PAYLOAD_MARK})
            before, marked, after = marked_row.partition(driver.literal(connection, _PAYLOAD_MARK))
            if not marked:  # cannot happen with batchq's own statement; stay correct anyway
                return super().insert_jobs(template, payloads, conn)
            limit = db._statement_limit(connection)
            values = []
            for data in payloads:
                value = before + driver.literal(connection, data) + after
                check_statement_size(len(prefix) + len(value), limit)
                values.append(value)
        statements = list(chunks(values, min(MULTI_ROW_STATEMENT_BYTES, limit) - len(prefix)))
        if conn is None and len(statements) > 1:
            with db.transaction():
                db._send_chunks(prefix, statements, None)
        else:
            db._send_chunks(prefix, statements, conn)
        return len(payloads)

    def claim(
        self,
        queue: str,
        worker: str,
        token: str,
        limit: int = 1,
        done: Sequence[Job] = (),
        partition: int | None = None,
        kept: Sequence[Kept] | None = None,
    ) -> Claim:
        """Two round trips, one commit: jobs_claim (begin, delete what is done, lock the next
        jobs; jobs_claim_keep: first copy what is done into the history) as one multi-statement
        query, then jobs_claim_mark (mark them, commit)."""
        db = self.db
        params = {"queue": queue, "limit": limit, "partition": partition, **done_params(done)}
        params["done_ids"] = params["done_ids"] or [None]  # IN (NULL): PyMySQL cannot send ()
        if partition is not None:
            name = "jobs_claim_partition" if db.skip_locked else "jobs_claim_partition_waiting"
        elif kept is not None and len(kept) == 1:  # one job: its figures as plain parameters
            name = "jobs_claim_keep_one"
            params.update(kept[0].params())
        elif kept is not None:
            self.check_history()
            name, params["kept"] = "jobs_claim_keep", kept_document(kept)
        else:
            name = "jobs_claim" if db.skip_locked else "jobs_claim_waiting"
        with db.session_lock:
            try:
                *_, (deleted, _), (_, rows) = db._multi(name, params)
                ids = [row[0] for row in rows]
                if ids:
                    self._mark(ids, worker, token, params)
                else:
                    self._commit_without_jobs(params)
            except BaseException:
                db._rollback_quietly()  # a failed statement may leave the claim's transaction open
                raise
        return Claim(deleted, [Job.from_row(row, token) for row in rows])

    def _mark(self, ids: list[Any], worker: str, token: str, claim: dict[str, Any]) -> None:
        """jobs_claim_mark; on Galera, checked: a claim whose commit did not happen is retried."""
        params = {"ids": ids, "worker": worker, "token": token}
        if not self.db.galera:
            self.db._multi("jobs_claim_mark", params)
            return
        checked = {**params, "done_token": claim["done_token"], "done_ids": claim["done_ids"]}
        *_, (_, [(marked, undeleted)]) = self.db._multi("jobs_claim_mark_checked", checked)
        if marked != len(ids) or undeleted:
            raise TransientError(
                f"the claim's commit did not happen ({marked} of {counted(len(ids), 'job')} marked, "
                f"{counted(undeleted, 'finished job')} left): a replicated write aborted it"
            )

    def _commit_without_jobs(self, claim: dict[str, Any]) -> None:
        """Commit a claim that found nothing; on Galera, checked as _mark checks: finished jobs
        the commit silently left would stay `processing` under this worker's name, and once it
        exits, gc-processing would put them back to run again."""
        db = self.db
        if not (db.galera and claim["done_token"] is not None):
            with db.errors():
                db.conn.commit()
            return
        *_, (_, [(undeleted,)]) = db._multi("jobs_claim_mark_none_checked", claim)
        if undeleted:
            raise TransientError(
                f"the claim's commit did not happen ({counted(undeleted, 'finished job')} left): "
                "a replicated write aborted it"
            )

    def _delete_keeping(self, jobs: Sequence[Job], kept: Sequence[Kept]) -> int:
        """jobs_delete_keep: copy into the history and delete, one transaction, one round trip;
        inside a transaction already open, jobs_keep then jobs_delete in it."""
        db = self.db
        self.check_history()
        if db._in_transaction:
            db.execute("jobs_keep", {**done_params(jobs), "kept": kept_document(kept)})
            return self.delete_jobs(jobs)
        with db.session_lock:
            try:
                results = db._multi("jobs_delete_keep", {**done_params(jobs), "kept": kept_document(kept)})
            except BaseException:
                db._rollback_quietly()
                raise
        return results[3][0]  # SET, START, REPLACE, DELETE, COMMIT

    def check_history(self) -> None:
        db = self.db
        db.conn  # noqa: B018 - connect to read the version
        if not supports_skip_locked(db.server_version):  # the same versions have JSON_TABLE
            raise ConfigError(
                f"keeping job history needs JSON_TABLE, which MySQL/MariaDB {db.server_version} "
                "lacks: upgrade to MySQL 8.0 or MariaDB 10.6, or keep no history (no --keep, no keep_for)"
            )

    @property
    def expiring_query(self) -> str:
        return "jobs_expiring" if self.db.skip_locked else "jobs_expiring_waiting"


def _bigint_array(ids: list[int]) -> str:
    """Job ids as PostgreSQL's array text, for a ``::bigint[]`` parameter: psycopg sends a str as
    it is, where a list costs it a scan of the elements and a dumper on every call (13 us of CPU a
    statement here, against 33 for the rest of it: a claim of one job pays it each time)."""
    return "{" + ",".join(map(str, ids)) + "}"


def enqueue_statement(name: str, template: dict[str, Any]) -> str:
    """``name`` (enqueue, enqueue_many), or its ``_now`` form for a job due now with no
    concurrency key, expiry, per-key rate or partitions: most jobs, and a statement the server
    evaluates no CASE or date arithmetic in (a row of its options spelt out costs as much again
    as the row's insert on MariaDB: bench/insert_cost.py)."""
    plain = (
        not template["delay"]
        and template["at"] is None
        and template["concurrency_key"] is None
        and template["expires"] is None
        and template["expires_at"] is None
        and template["rate_key"] is None
        and template["partitions"] == 1
    )
    return f"{name}_now" if plain else name


@lru_cache(maxsize=32)  # one per batch size in use; sqlite3 caches each compiled
def _multi_row_insert(enqueue: str, rows: int) -> str:
    """The enqueue statement with ``rows`` VALUES rows, payload n bound as :p<n>."""
    head, row_sql = VALUES.split(enqueue.strip().rstrip(";"), maxsplit=1)
    values = ",".join(row_sql.replace(":payload", f":p{n}") for n in range(rows))
    return f"{head} VALUES {values}"


# A claimed row's columns the claim orders by: priority (DESC), then run_at (the last column
# returned) and id. C key functions: no Python call per row.
_PRIORITY = operator.itemgetter(5)
_RUN_AT_ID = operator.itemgetter(-1, 0)
# SQLite's order of storage classes: NULL, numbers, text, blobs.
_STORAGE_CLASS = {type(None): 0, int: 1, float: 1, str: 2, bytes: 3}


def _sort_claimed(rows: list[tuple[Any, ...]]) -> None:
    """A batch in the claim index's order (priority DESC, run_at, id), as SQLite sorts: by run_at
    and id, then stably by priority, descending. A row written by hand may hold values Python
    cannot compare (text and a number): those sort by SQLite's storage class first."""
    try:
        rows.sort(key=_RUN_AT_ID)
        rows.sort(key=_PRIORITY, reverse=True)
    except TypeError:
        rows.sort(key=_stored_run_at_id)
        rows.sort(key=_stored_priority, reverse=True)


def _stored(value: Any) -> tuple[int, Any]:
    """A value's place in SQLite's order: its storage class, then the value within it."""
    return (_STORAGE_CLASS[type(value)], 0 if value is None else value)


def _stored_run_at_id(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (_stored(row[-1]), row[0])


def _stored_priority(row: tuple[Any, ...]) -> tuple[int, Any]:
    return _stored(row[5])
