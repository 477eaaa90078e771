"""A Django app that enqueues with conn=: `python django_conn_app.py URL SCENARIO TMPDIR PG_URL`.

Django is configured once per process, so each scenario runs in a process of its own
(tests/contract/test_django_conn.py). DATABASES["default"] is the queue's database at URL (the
batchq tables are there); "other" is a database of another dialect (an SQLite file for the
servers' queues, in TMPDIR; the PostgreSQL test database at PG_URL for SQLite's). Prints one
JSON object: what the scenario saw; the test then looks at the database from outside.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import django
from django.conf import settings

from batchq import MessageQueue, Queue
from batchq.core.config import parse_url


def databases(url: str) -> dict[str, Any]:
    parsed = parse_url(url)
    if parsed.dialect == "sqlite":
        other = server_settings(parse_url(sys.argv[4]))
        return {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": parsed.database}, "other": other}
    other = {"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(sys.argv[3], "other.db")}
    return {"default": server_settings(parsed), "other": other}


def server_settings(parsed: Any) -> dict[str, Any]:
    server = {
        "NAME": parsed.database,
        "USER": parsed.user or ("root" if parsed.dialect == "mysql" else "postgres"),
        "PASSWORD": parsed.password or "",
        "HOST": parsed.host,
        "PORT": str(parsed.port or ""),
    }
    if parsed.dialect == "mysql":
        server.update(ENGINE="django.db.backends.mysql", OPTIONS={"charset": "utf8mb4"})
    else:
        server.update(ENGINE="django.db.backends.postgresql")
    return server


url, scenario = sys.argv[1], sys.argv[2]
settings.configure(DATABASES=databases(url), USE_TZ=True, INSTALLED_APPS=[])
django.setup()

from django.db import DatabaseError, connection, connections, transaction  # noqa: E402

queue = Queue(url, task_modules=["jobs"], secret=b"test-secret")
seen: dict[str, Any] = {}


def app_row(n: int) -> None:
    """The app's own write, through Django, in the same transaction as the job."""
    with connection.cursor() as cur:
        cur.execute("INSERT INTO test_ledger (n, pid) VALUES (%s, %s)", [n, os.getpid()])


def committed() -> None:
    with transaction.atomic():
        app_row(1)
        seen["id"] = queue.enqueue("jobs:noop", {"n": 1}, conn=connection)


def rolled_back() -> None:
    try:
        with transaction.atomic():
            app_row(1)
            seen["id"] = queue.enqueue("jobs:noop", {"n": 1}, conn=connection)
            raise RuntimeError("the view failed")
    except RuntimeError:
        pass


def autocommit() -> None:
    """Outside atomic(): Django's autocommit writes the job at once, seen from another connection."""
    assert connection.get_autocommit()
    seen["id"] = queue.enqueue("jobs:noop", {"n": 1}, conn=connections["default"])
    looker = Queue(url)
    seen["ready_seen_at_once"] = sum(s.ready for s in looker.stats())
    looker.close()


def savepoint() -> None:
    """A nested atomic() rolled back takes its job with it; the outer block's stays."""
    with transaction.atomic():
        seen["outer"] = queue.enqueue("jobs:noop", {"n": 1}, conn=connection)
        try:
            with transaction.atomic():
                seen["inner"] = queue.enqueue("jobs:noop", {"n": 2}, conn=connection)
                raise RuntimeError("inner failed")
        except RuntimeError:
            pass


def broken() -> None:
    """A transaction Django has marked for rollback is refused, as Django refuses any query."""
    with transaction.atomic():
        transaction.set_rollback(True)
        try:
            queue.enqueue("jobs:noop", {"n": 1}, conn=connection)
        except DatabaseError as exc:  # TransactionManagementError
            seen["refused"] = f"{type(exc).__name__}: {exc}"


def other_dialect() -> None:
    """A Django connection to an SQLite database given to a server's queue: refused, before
    anything is written (and before Django even connects to it)."""
    other = connections["other"]
    try:
        queue.enqueue("jobs:noop", {"n": 1}, conn=other)
    except Exception as exc:
        seen["refused"] = f"{type(exc).__name__}: {exc}"
    seen["other_connected"] = other.connection is not None


def every_operation() -> None:
    """Every job and message operation that takes conn=, in one atomic() block, on Django's
    driver connection (its own cursor classes, converters and adapters in place)."""
    mq = MessageQueue(url)
    mq.subscribe("topic", "sub")  # before the block takes its locks
    mq.create_queue("plain")
    queue.create_queue("typed", schema={"type": "object"})
    queue.configure("bounded", max_length=10, overflow="reject")
    with transaction.atomic():
        ids = [
            queue.enqueue("jobs:noop", {"n": 1}, conn=connection),
            queue.enqueue("jobs:noop", {"n": 2}, unique_key="k1", conn=connection),
            queue.enqueue("jobs:noop", {"n": 3}, queue="typed", conn=connection),
            queue.enqueue("jobs:noop", {"n": 4}, queue="bounded", conn=connection),
            queue.enqueue("jobs:noop", b"\x00\xff binary", serializer="pickle", conn=connection),
        ]
        again = queue.enqueue("jobs:noop", {"n": 5}, unique_key="k1", conn=connection)
        seen["unique_again"] = again == ids[1] and not again.created
        seen["many"] = queue.enqueue_many("jobs:noop", [{"n": 6}, {"n": 7}], conn=connection)
        seen["many_unique"] = queue.enqueue_many("jobs:noop", [{"n": 8}], unique_keys=["k2"], conn=connection)
        seen["typed"] = queue.payload_type("typed", conn=connection).text is not None
        first = mq.send("plain", {"m": 1}, conn=connection)
        mq.send_batch("plain", [{"m": 2}, {"m": 3}], conn=connection)
        seen["read"] = [m.message for m in mq.read("plain", vt=30, qty=2, conn=connection)]
        seen["deleted"] = mq.delete("plain", first, conn=connection)
        seen["popped"] = mq.pop("plain", conn=connection).message  # type: ignore[union-attr]
        seen["published"] = mq.publish("topic", {"m": 4}, conn=connection)
    mq.close()


def ready() -> int:
    looker = Queue(url)
    try:
        return sum(s.ready for s in looker.stats())
    finally:
        looker.close()


def app_note(n: int) -> None:
    """The app's write in its own database ("other"), not the queue's."""
    with connections["other"].cursor() as cur:
        cur.execute("INSERT INTO app_note (n) VALUES (%s)", [n])


def app_notes() -> list[int]:
    with connections["other"].cursor() as cur:
        cur.execute("SELECT n FROM app_note ORDER BY n")
        return [row[0] for row in cur.fetchall()]


def on_commit(body: Any) -> Any:
    """A scenario of enqueue_on_commit on the "other" database, whose notes start empty."""

    def scenario() -> None:
        with connections["other"].cursor() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS app_note (n INTEGER NOT NULL)")
            cur.execute("DELETE FROM app_note")
        body()
        seen["notes"] = app_notes()
        seen["ready_after"] = ready()

    scenario.__name__ = body.__name__
    return scenario


@on_commit
def on_commit_committed() -> None:
    with transaction.atomic(using="other"):
        app_note(1)
        queue.enqueue_on_commit(connections["other"], "jobs:noop", {"n": 1}, queue="mail")
        seen["ready_inside"] = ready()


@on_commit
def on_commit_rolled_back() -> None:
    try:
        with transaction.atomic(using="other"):
            app_note(1)
            queue.enqueue_on_commit(connections["other"], "jobs:noop", {"n": 1})
            raise RuntimeError("the view failed")
    except RuntimeError:
        pass
    with transaction.atomic(using="other"):
        app_note(2)  # a later commit does not bring the dropped job back


@on_commit
def on_commit_autocommit() -> None:
    queue.enqueue_on_commit(connections["other"], "jobs:noop", {"n": 1})
    seen["ready_at_once"] = ready()


@on_commit
def on_commit_savepoint() -> None:
    with transaction.atomic(using="other"):
        queue.enqueue_on_commit(connections["other"], "jobs:noop", {"n": 1})
        try:
            with transaction.atomic(using="other"):
                queue.enqueue_on_commit(connections["other"], "jobs:noop", {"n": 2})
                raise RuntimeError("inner failed")
        except RuntimeError:
            pass


@on_commit
def on_commit_failure() -> None:
    """The job cannot be written after the commit (its bounded queue is full): logged with what
    was lost, raised where the atomic() block ends; the app's data stays committed."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logging.getLogger("batchq.on_commit").addHandler(Keep())
    queue.configure("full", max_length=1, overflow="reject")
    queue.enqueue("jobs:noop", queue="full")
    try:
        with transaction.atomic(using="other"):
            app_note(1)
            queue.enqueue_on_commit(connections["other"], "jobs:noop", {"n": 1}, queue="full")
    except Exception as exc:
        seen["raised"] = type(exc).__name__
    seen["logged"] = records


SCENARIOS = (
    committed,
    rolled_back,
    autocommit,
    savepoint,
    broken,
    other_dialect,
    every_operation,
    on_commit_committed,
    on_commit_rolled_back,
    on_commit_autocommit,
    on_commit_savepoint,
    on_commit_failure,
)
{f.__name__: f for f in SCENARIOS}[scenario]()
queue.close()
print(json.dumps(seen))
