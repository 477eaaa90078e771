"""Every dialect defines the same named queries, apart from the extras it declares here.

A query one dialect lacks fails this test unless it is declared below, with the reason; a
declared extra a dialect no longer defines fails it too, so the lists stay true.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from batchq.backends.sqlfiles import queries
from tests.support.queries import DIALECTS, named_queries

# batchq's own queries (sql/<dialect>/*.sql).
# The servers keep a worker's session through long jobs, hold its liveness in a lock, find and
# end the sessions behind a lock, and serialise concurrent init-db with a lock; SQLite has one
# writer and reads a worker's liveness from its pid.
SERVER_ONLY = {
    "end_session",
    "heartbeat",
    "keep_session_open",
    "liveness_ghost",
    "liveness_handover_lock",
    "liveness_handover_unlock",
    "liveness_held",
    "liveness_holder",
    "liveness_lock",
    "liveness_lock_wait",
    "migration_lock",
    "migration_unlock",
    "lease_renew",  # lease liveness (?liveness=lease): SQLite workers are told alive by their process
    "lease_drop",
    "leases_prune",
}
PRODUCT_EXTRAS: Mapping[str, set[str]] = {
    "mysql": SERVER_ONLY
    | {
        # No RETURNING: a claim or a read is a SELECT (... SKIP LOCKED where the server has it),
        # then an UPDATE of the rows it found.
        "jobs_claim_waiting",  # jobs_claim without SKIP LOCKED, for older servers
        "jobs_expiring_waiting",  # jobs_expiring without SKIP LOCKED, likewise
        "jobs_claim_mark",
        "jobs_claim_mark_checked",  # on Galera: and did the commit happen (see the query)
        "jobs_claim_mark_none_checked",  # on Galera: a claim that found nothing, checked likewise
        "session_isolation",  # READ COMMITTED, once per session
        "mq_read_mark",
        "mq_read_no_skip",
        "mq_pop_mark",
        "mq_pop_no_skip",
        "mq_read_grouped_no_skip",  # mq_read_grouped for servers without SKIP LOCKED
        "server_info",  # the version and whether it has SKIP LOCKED, read once per connection
        "max_allowed_packet",  # what bounds a statement's size
        "galera_info",  # is the server a Galera cluster node (wsrep on, with a provider)
        "wsrep_sync_wait",  # on Galera: liveness_held reads causally
        "lock_taken",  # after lock_take: the slot and token it gave (no RETURNING)
        "partition_leased",  # after partition_lease: the partition it gave (no RETURNING)
        "jobs_claim_partition_waiting",  # jobs_claim_partition without SKIP LOCKED
        # The limited claim (batchq.stores.flow) inside its transaction: SQLite and PostgreSQL
        # run jobs_claim there; MySQL locks the jobs, then marks them, without jobs_claim's COMMIT.
        "flow_claim_pick",
        "flow_claim_mark",
        # History: the finished jobs copied in the claim's own round trip (SQLite: jobs_keep in
        # the claim's transaction).
        "jobs_claim_keep",
        "jobs_claim_keep_one",  # one kept job: its figures as plain parameters, no JSON_TABLE
        "jobs_delete_keep",
        "jobs_keep",  # as SQLite's: in a transaction already open (a job finished in its own)
    },
    "postgresql": SERVER_ONLY
    | {
        "enqueue_many",  # the payloads as one array: unnest()
        "enqueue_many_now",  # the same for jobs due now with no keys (enqueue_now's)
        "enqueue_many_unique",  # the same, with a unique key per payload
        "listen",  # LISTEN for jobs becoming due
        "session_backend",  # pg_backend_pid(): a pooler between answers with another pid
        "mq_send_unlogged",  # a non-durable queue's send, into the UNLOGGED table (PostgreSQL only)
        "mq_send_async_commit",  # ... whose own transaction's commit need not wait for the WAL flush
        "pubsub_listen_messages",  # LISTEN for publishes (batchq consume)
        "results_listen",  # LISTEN for jobs ending (Queue.result(wait=...))
        "results_unlisten",
        # Dead rows: workers VACUUM the job table (InnoDB purges by itself, SQLite reuses pages).
        "jobs_vacuum_lock",
        "jobs_vacuum",
        "jobs_vacuum_unlock",
        "jobs_claim_keep",  # as MySQL's: the history copied in the claim's one statement
        "jobs_claim_keep_one",
        "jobs_delete_keep",
    },
    "sqlite": {
        "session_foreign_keys",  # a PRAGMA per connection
        "jobs_keep",  # the history copied before jobs_delete, in the claim's BEGIN IMMEDIATE
    },
}

# The tests' own queries (tests/sql/<dialect>.sql).
# Sessions to kill, lock waits to shorten, tables to lock, server settings: servers only.
TEST_SERVER_ONLY = {
    "lock_wait_short",
    "sessions_running",
    "sessions_waiting_for_table_lock",
    "sessions_idle",
    "session_client_ports",
    "session_end",
    "jobs_table_lock",
    "jobs_table_unlock",
    "job_insert_due",  # written under jobs_table_lock by the session that holds it
    "server_idle_timeout_short",
}
TEST_EXTRAS: Mapping[str, set[str]] = {
    "mysql": TEST_SERVER_ONLY | {"max_allowed_packet"},  # the payload size tests' bound
    "postgresql": TEST_SERVER_ONLY
    | {
        "server_reload_conf",  # ALTER SYSTEM needs a reload
        "stats_flush",  # the statistics a worker's vacuum decision reads
        "job_table_vacuums",
        "vacuum_lock_take",
        "jobs_refuse_function",  # a trigger runs a function of its own
    },
    "sqlite": set(),
}


def _check_names(
    load: Callable[[str], Mapping[str, str]], extras: Mapping[str, set[str]], where: str
) -> None:
    names = {dialect: set(load(dialect)) for dialect in DIALECTS}
    for dialect in DIALECTS:
        stale = extras[dialect] - names[dialect]
        assert not stale, f"{where}: {dialect} declares extras it does not define: {sorted(stale)}"
    shared = {dialect: names[dialect] - extras[dialect] for dialect in DIALECTS}
    every = set.union(*shared.values())
    for dialect in DIALECTS:
        missing = every - shared[dialect]
        assert not missing, (
            f"{where}: {dialect} lacks {sorted(missing)}, which another dialect defines "
            "(define it, or declare it as that dialect's extra in this test)"
        )


def test_query_names_match_across_dialects() -> None:
    """batchq's queries (jobs, messages, schema): the same names in every dialect."""
    _check_names(queries, PRODUCT_EXTRAS, "sql/<dialect>/*.sql")


def test_test_query_names_match_across_dialects() -> None:
    """The tests' named queries: the same names in every dialect."""
    _check_names(named_queries, TEST_EXTRAS, "tests/sql/<dialect>.sql")


# Where each dialect's claim names the columns Job.from_row reads: MySQL's locking SELECT,
# PostgreSQL's final SELECT of the claimed rows, SQLite's RETURNING.
_CLAIM_COLUMNS = {
    "mysql": re.compile(r"SELECT (id, queue,.*?)\s+FROM batchq_job", re.S),
    "postgresql": re.compile(r"SELECT (claimed\.id,.*?)\s+FROM \(SELECT 1\)", re.S),
    "sqlite": re.compile(r"RETURNING (id, queue,.*?);?$", re.S),
}


def test_every_claim_returns_the_columns_a_job_is_read_from() -> None:
    """jobs_claim and its variants (partitioned, keeping history, without SKIP LOCKED) return
    the same columns in the same order: a variant left behind when a column was added would
    hand Job.from_row the wrong value, silently."""
    for dialect in DIALECTS:
        found = {
            name: " ".join(_CLAIM_COLUMNS[dialect].search(sql).group(1).split())  # type: ignore[union-attr]
            for name, sql in queries(dialect).items()
            if name.startswith("jobs_claim") and not name.startswith("jobs_claim_mark")
        }
        assert len(found) >= 2 and len(set(found.values())) == 1, (dialect, found)
