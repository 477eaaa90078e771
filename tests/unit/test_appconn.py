"""batchq.backends.appconn without a database: every conn= entry point unwraps what the app holds, and
what cannot be written on is refused by name."""

from __future__ import annotations

import inspect
import sqlite3

import pytest

from batchq import ConfigError, MessageQueue, Queue
from batchq.backends.appconn import driver_connection
from batchq.mq import pubsub


def conn_methods() -> list[tuple[str, object]]:
    found = [("pubsub.publish", pubsub.publish)]
    for cls in (Queue, MessageQueue):
        for name, member in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith("_") and "conn" in inspect.signature(member).parameters:
                found.append((f"{cls.__name__}.{name}", member))
    return found


def test_every_public_conn_entry_point_takes_what_the_app_holds() -> None:
    """Each public method with a conn= parameter goes through takes_app_conn (it unwraps a
    Django connection or an SQLAlchemy Session before anything else runs)."""
    methods = conn_methods()
    assert len(methods) >= 18, [name for name, _ in methods]
    for name, method in methods:
        assert getattr(method, "__wrapped__", None) is not None, f"{name} does not unwrap conn="
        assert inspect.signature(method).parameters["conn"].kind is inspect.Parameter.KEYWORD_ONLY, name


def test_a_driver_connection_passes_as_it_is_and_another_dialects_is_refused() -> None:
    conn = sqlite3.connect(":memory:")
    assert driver_connection(conn, "sqlite") is conn
    with pytest.raises(
        ConfigError, match=r"a sqlite3 connection to a SQLite database, but this queue's .* MySQL"
    ):
        driver_connection(conn, "mysql", "mysql://db/app")


@pytest.mark.parametrize("thing", [None.__class__, 42, "sqlite:///x.db", object()])
def test_anything_else_is_refused_naming_what_is_accepted(thing: object) -> None:
    with pytest.raises(
        ConfigError, match="a Django connection, an SQLAlchemy Connection or Session, or a psycopg"
    ):
        driver_connection(thing, "postgresql")
