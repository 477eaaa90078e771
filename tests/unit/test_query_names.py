"""Every dialect defines the same named queries, apart from the extras it declares here.

A query one dialect lacks fails this test unless it is declared below, with the reason; a
declared extra a dialect no longer defines fails it too, so the lists stay true.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from batchq.sqlfiles import queries
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
}
PRODUCT_EXTRAS: Mapping[str, set[str]] = {
    "mysql": SERVER_ONLY
    | {
        # No RETURNING: a claim or a read is a SELECT (... SKIP LOCKED where the server has it),
        # then an UPDATE of the rows it found.
        "jobs_claim_waiting",  # jobs_claim without SKIP LOCKED, for older servers
        "jobs_claim_mark",
        "session_isolation",  # READ COMMITTED, once per session
        "mq_read_mark",
        "mq_read_no_skip",
        "mq_pop_mark",
        "mq_pop_no_skip",
        "server_info",  # the version and whether it has SKIP LOCKED, read once per connection
        "max_allowed_packet",  # what bounds a statement's size
        "lock_taken",  # after lock_take: the slot and token it gave (no RETURNING)
        "partition_leased",  # after partition_lease: the partition it gave (no RETURNING)
        "jobs_claim_partition_waiting",  # jobs_claim_partition without SKIP LOCKED
    },
    "postgresql": SERVER_ONLY
    | {
        "enqueue_many",  # the payloads as one array: unnest()
        "enqueue_many_unique",  # the same, with a unique key per payload
        "listen",  # LISTEN for jobs becoming due
        "mq_send_unlogged",  # a non-durable queue's send, into the UNLOGGED table (PostgreSQL only)
        "mq_send_async_commit",  # ... whose own transaction's commit need not wait for the WAL flush
        # Dead rows: workers VACUUM the job table (InnoDB purges by itself, SQLite reuses pages).
        "jobs_vacuum_lock",
        "jobs_vacuum",
        "jobs_vacuum_unlock",
    },
    "sqlite": {"session_foreign_keys"},  # a PRAGMA per connection
}

# The tests' own queries (tests/sql/<dialect>.sql).
# Sessions to kill, lock waits to shorten, tables to lock, server settings: servers only.
TEST_SERVER_ONLY = {
    "lock_wait_short",
    "sessions_running",
    "sessions_idle",
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
