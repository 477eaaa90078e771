"""Stores own their SQL: the named queries of a concern with a store (batchq.stores) are run by
its store alone. A feature module that names one of them fails this test: call a store method
(and add one, as docs/contributing.md says, where none fits)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from batchq.backends.sqlfiles import parse_queries

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "batchq"
DIALECTS = ("mysql", "postgresql", "sqlite")
# Every statement file of a dialect belongs to a store, but the connection's own (batchq.backends).
CONNECTION_FILE = "connection.sql"
# The connection's own statements in the stores' files, run by a backend: LISTEN and UNLISTEN
# (wait_for_messages, result_notes).
CONNECTION_QUERIES = {"pubsub_listen_messages", "results_listen", "results_unlisten"}
# Query names that are also a method's and a command's: a literal of them names those.
ALSO_METHODS = {"enqueue", "enqueue_many"}


def store_queries() -> set[str]:
    names: set[str] = set()
    for dialect in DIALECTS:
        for path in (ROOT / "sql" / dialect).glob("*.sql"):
            if path.name != CONNECTION_FILE:
                names |= parse_queries(path.read_text("utf-8")).keys()
    return names - CONNECTION_QUERIES - ALSO_METHODS


def modules_outside_the_stores() -> list[Path]:
    return [path for path in sorted(PACKAGE.rglob("*.py")) if "stores" not in path.relative_to(PACKAGE).parts]


def test_there_are_store_queries_to_look_for() -> None:
    expected = {
        "lock_take",
        "partition_lease",
        "schedule_advance",
        "worker_seen",
        "deps_parents",
        "mq_read",
        "pubsub_publish",
        "jobs_claim",
        "result_read",
        "testing_clear",
    }
    assert expected <= store_queries()


@pytest.mark.parametrize("path", modules_outside_the_stores(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_outside_the_stores_names_a_store_query(path: Path) -> None:
    literals = set(re.findall(r"""["']([a-z_]+)["']""", path.read_text("utf-8")))
    assert not literals & store_queries(), f"{path.name}: call the store's method instead"
