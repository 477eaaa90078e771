"""Stores own their SQL: the named queries of a concern with a store (batchq.stores) are run by
its store alone. A feature module that names one of them fails this test: call a store method
(and add one, as docs/contributing.md says, where none fits)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from batchq.sqlfiles import parse_queries

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "batchq"
# The sql/<dialect>/*.sql files whose queries belong to a store.
STORE_FILES = (
    "locks",
    "partitions",
    "schedules",
    "bounds",
    "workers",
    "settings",
    "flow",
    "dependencies",
    "charts",
    "metrics",  # these three: the inspection store's
    "explain",
    "dashboard",
    "mq",
    "mqview",
    "pubsub",
)
DIALECTS = ("mysql", "postgresql", "sqlite")
# The connection's own statements in those files, run by a backend: LISTEN (wait_for_messages).
CONNECTION_QUERIES = {"pubsub_listen_messages"}


def store_queries() -> set[str]:
    names: set[str] = set()
    for dialect in DIALECTS:
        for file in STORE_FILES:
            names |= parse_queries((ROOT / "sql" / dialect / f"{file}.sql").read_text("utf-8")).keys()
    return names - CONNECTION_QUERIES


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
    }
    assert expected <= store_queries()


@pytest.mark.parametrize("path", modules_outside_the_stores(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_outside_the_stores_names_a_store_query(path: Path) -> None:
    literals = set(re.findall(r"""["']([a-z_]+)["']""", path.read_text("utf-8")))
    assert not literals & store_queries(), f"{path.name}: call the store's method instead"
