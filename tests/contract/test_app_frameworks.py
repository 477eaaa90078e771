"""conn= with an SQLAlchemy Connection or Session, and with mysqlclient (issue 24).

The job and the message commit and roll back with the app's transaction, on every backend,
through SQLAlchemy's own drivers (PyMySQL and mysqlclient on MySQL, psycopg 3, sqlite3); batchq
neither commits nor rolls back nor changes autocommit there. Django: test_django_conn.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, scoped_session, sessionmaker

from batchq import ConfigError, MessageQueue, Queue, SchemaMissing
from batchq.core.config import parse_url
from tests.contract import test_app_row_shapes as shapes
from tests.support.db import ledger


def engine_url(db_url: str, mysql_driver: str = "pymysql") -> str:
    url = parse_url(db_url)
    if url.dialect == "sqlite":
        return f"sqlite:///{url.database}"
    driver = mysql_driver if url.dialect == "mysql" else "psycopg"
    port = url.port or DEFAULT_PORTS[url.dialect]
    return f"{url.dialect}+{driver}://{url.user}@{url.host}:{port}/{url.database}"


DEFAULT_PORTS = {"mysql": 3306, "postgresql": 5432}


@pytest.fixture
def engine(db_url: str) -> Iterator[sa.Engine]:
    engine = sa.create_engine(engine_url(db_url))
    yield engine
    engine.dispose()


def ready(queue: Queue) -> int:
    return sum(s.ready for s in queue.stats())


def app_row(conn: Any, n: int) -> None:
    """The app's own write, through SQLAlchemy, in the same transaction as the job."""
    conn.execute(sa.text("INSERT INTO test_ledger (n, pid) VALUES (:n, 0)"), {"n": n})


# -- what an app holds, in each transaction state ------------------------------------------


@pytest.fixture(params=["Connection", "Session", "scoped_session", "mysqldb Connection", "mysqldb Session"])
def held(request: pytest.FixtureRequest, db_url: str, backend_name: str) -> Iterator[Any]:
    """An SQLAlchemy Connection or Session, with commit() and rollback() of its own; on MySQL
    through PyMySQL and through mysqlclient (the "mysqldb" kinds: on the other backends, their
    one driver again)."""
    driver = "mysqldb" if request.param.startswith("mysqldb") else "pymysql"
    engine = sa.create_engine(engine_url(db_url, driver))
    if request.param.endswith("Connection"):
        thing: Any = engine.connect()
    elif request.param == "scoped_session":
        thing = scoped_session(sessionmaker(engine))
    else:
        thing = Session(engine)
    yield thing
    thing.close()
    engine.dispose()


def test_every_job_operation(queue: Queue, held: Any, backend_name: str) -> None:
    shapes.test_every_job_operation_on_a_connection_of_another_row_shape(queue, held, backend_name)


def test_every_message_operation(db_url: str, held: Any, backend_name: str) -> None:
    shapes.test_every_message_operation_on_a_connection_of_another_row_shape(db_url, held, backend_name)


def test_a_rolled_back_transaction_leaves_nothing(queue: Queue, db_url: str, held: Any) -> None:
    shapes.test_a_rolled_back_transaction_of_another_row_shape_leaves_nothing(queue, db_url, held)


def test_batchq_neither_commits_nor_ends_the_transaction(queue: Queue, held: Any) -> None:
    app_row(held, 1)
    job = queue.enqueue("jobs:noop", {"n": 1}, conn=held)
    session = held() if isinstance(held, scoped_session) else held
    assert session.in_transaction() and ready(queue) == 0  # written, not committed
    held.commit()
    assert ready(queue) == 1 and queue.explain(job).state == "waiting" and ledger(queue) == [1]


# -- the transaction forms an app writes -----------------------------------------------------


def test_engine_begin_commits_the_job_with_the_block(queue: Queue, engine: sa.Engine) -> None:
    with engine.begin() as conn:
        app_row(conn, 1)
        queue.enqueue("jobs:noop", {"n": 1}, conn=conn)
    assert ready(queue) == 1 and ledger(queue) == [1]


def test_engine_begin_rolls_the_job_back_with_the_block(queue: Queue, engine: sa.Engine) -> None:
    with pytest.raises(RuntimeError), engine.begin() as conn:
        app_row(conn, 1)
        queue.enqueue("jobs:noop", {"n": 1}, conn=conn)
        raise RuntimeError("the view failed")
    assert ready(queue) == 0 and ledger(queue) == []


def test_a_connection_not_yet_in_a_transaction_is_begun_as_its_next_statement_would(
    queue: Queue, engine: sa.Engine
) -> None:
    """engine.connect() autobegins on its first statement; the job is that statement here, and
    the app's commit() commits it. Without that, commit() would find no transaction and the
    pool's reset would roll the job back."""
    with engine.connect() as conn:
        assert not conn.in_transaction()
        queue.enqueue("jobs:noop", {"n": 1}, conn=conn)
        assert conn.in_transaction()
        conn.commit()
    with engine.connect() as conn:
        queue.enqueue("jobs:noop", {"n": 2}, conn=conn)
        # closed without commit: rolled back, as any statement of it would be
    assert ready(queue) == 1


def test_session_commit_and_rollback(queue: Queue, engine: sa.Engine) -> None:
    with Session(engine) as session:
        app_row(session, 1)
        queue.enqueue("jobs:noop", {"n": 1}, conn=session)
        session.commit()
        queue.enqueue("jobs:noop", {"n": 2}, conn=session)  # a new transaction (autobegin)
        app_row(session, 2)
        session.rollback()
    with Session(engine) as session, session.begin():
        queue.enqueue("jobs:noop", {"n": 3}, conn=session)
    assert ready(queue) == 2 and ledger(queue) == [1]


def test_a_session_savepoint_rolled_back_takes_its_job(queue: Queue, engine: sa.Engine) -> None:
    with Session(engine) as session:
        queue.enqueue("jobs:noop", {"n": 1}, conn=session)
        nested = session.begin_nested()
        queue.enqueue("jobs:noop", {"n": 2}, conn=session)
        nested.rollback()
        session.commit()
    assert ready(queue) == 1


# -- refusals --------------------------------------------------------------------------------


def test_an_engine_is_refused_it_is_no_transaction(queue: Queue, engine: sa.Engine) -> None:
    with pytest.raises(ConfigError, match="an SQLAlchemy Engine .* which is no transaction"):
        queue.enqueue("jobs:noop", conn=engine)


def test_a_connection_of_another_dialect_is_refused_before_it_begins(
    queue: Queue, db_url: str, backend_name: str, tmp_path: Path
) -> None:
    if backend_name == "sqlite":
        other = sa.create_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")  # never reached
        name = "PostgreSQL"
    else:
        other = sa.create_engine(f"sqlite:///{tmp_path / 'app.db'}")
        name = "SQLite"
    session = Session(other)
    with pytest.raises(ConfigError, match=f"conn= got an SQLAlchemy Session .* to a {name} database, but"):
        queue.enqueue("jobs:noop", conn=session)
    assert not session.in_transaction()  # refused from the bind's dialect, before any transaction
    mq = MessageQueue(db_url)
    with pytest.raises(ConfigError, match=f"to a {name} database"):
        mq.send("anything", {}, conn=session)
    mq.close()
    assert ready(queue) == 0


@pytest.mark.backends("sqlite")
def test_a_closed_or_foreign_object_is_named_in_the_refusal(queue: Queue) -> None:
    with pytest.raises(ConfigError, match=r"conn= got builtins\.dict .*a Django connection, an SQLAlchemy"):
        queue.enqueue("jobs:noop", conn={})


# -- mysqlclient (MySQLdb) itself ---------------------------------------------------------------


def mysqlclient(db_url: str, **options: Any) -> Any:
    import MySQLdb

    url = parse_url(db_url)
    return MySQLdb.connect(
        host=url.host, port=url.port or 3306, user=url.user or "root", database=url.database, **options
    )


@pytest.fixture(params=["Cursor", "DictCursor", "SSDictCursor"])
def mysqldb(request: pytest.FixtureRequest, db_url: str) -> Iterator[Any]:
    """A mysqlclient connection as an app opens it (autocommit off), of each cursor class."""
    import MySQLdb.cursors

    conn = mysqlclient(db_url, charset="utf8mb4", cursorclass=getattr(MySQLdb.cursors, request.param))
    yield conn
    conn.close()


@pytest.mark.backends("mysql")
def test_every_job_operation_on_mysqlclient(queue: Queue, mysqldb: Any) -> None:
    shapes.test_every_job_operation_on_a_connection_of_another_row_shape(queue, mysqldb, "mysql")


@pytest.mark.backends("mysql")
def test_every_message_operation_on_mysqlclient(db_url: str, mysqldb: Any) -> None:
    shapes.test_every_message_operation_on_a_connection_of_another_row_shape(db_url, mysqldb, "mysql")


@pytest.mark.backends("mysql")
def test_mysqlclient_commit_and_rollback_and_autocommit_untouched(queue: Queue, mysqldb: Any) -> None:
    assert not mysqldb.get_autocommit()
    first = queue.enqueue("jobs:noop", {"n": 1}, conn=mysqldb)
    queue.enqueue_many("jobs:noop", [{"n": 2}, {"n": 3}], conn=mysqldb)
    assert ready(queue) == 0 and not mysqldb.get_autocommit()
    mysqldb.commit()
    queue.enqueue("jobs:noop", {"n": 4}, conn=mysqldb)
    mysqldb.rollback()
    assert ready(queue) == 3 and queue.explain(first).state == "waiting"


@pytest.mark.backends("mysql")
def test_mysqlclient_errors_are_batchqs_and_leave_the_transaction_usable(
    queue: Queue, db_url: str, mysqldb: Any
) -> None:
    """A statement the server refuses on the app's mysqlclient connection raises batchq's error
    (as on PyMySQL), and the app's transaction goes on and commits."""
    from tests.support.db import app_connection

    admin = app_connection(db_url)  # RENAME commits by itself
    admin.cursor().execute("RENAME TABLE batchq_queue TO batchq_queue_away")
    try:
        with pytest.raises(SchemaMissing, match="batchq tables are missing"):
            queue.enqueue("jobs:noop", {"n": 1}, conn=mysqldb)
    finally:
        admin.cursor().execute("RENAME TABLE batchq_queue_away TO batchq_queue")
        admin.close()
    queue.enqueue("jobs:noop", {"n": 2}, conn=mysqldb)
    mysqldb.commit()
    assert ready(queue) == 1


@pytest.mark.backends("mysql")
def test_a_mysqlclient_payload_too_large_for_its_session_is_refused_before_sending(
    queue: Queue, mysqldb: Any
) -> None:
    """max_allowed_packet is read on the app's mysqlclient session and the statement measured as
    mysqlclient sends it: a too large payload raises PayloadError and the connection lives."""
    import MySQLdb.cursors

    from batchq import PayloadError

    cur = mysqldb.cursor(MySQLdb.cursors.Cursor)
    cur.execute("SELECT @@max_allowed_packet")
    (packet,) = cur.fetchone()
    assert packet <= 16 * 1024 * 1024  # else the payload below would not reach it
    # The payload column takes it; the statement around it is longer than the packet.
    with pytest.raises(PayloadError, match="max_allowed_packet"):
        queue.enqueue("jobs:noop", "x" * (packet - 50), conn=mysqldb)
    queue.enqueue("jobs:noop", {"n": 1}, conn=mysqldb)
    mysqldb.commit()
    assert ready(queue) == 1


def test_sqlite3_and_raw_drivers_still_pass_as_they_are(queue: Queue, db_url: str, backend_name: str) -> None:
    from tests.support.db import app_connection

    conn = app_connection(db_url)
    assert queue.backend.app_connection(conn) is conn
    queue.enqueue("jobs:noop", conn=conn)
    conn.commit()
    conn.close()
    assert ready(queue) == 1


def test_inline_mode_takes_what_the_app_holds(queue: Queue, engine: sa.Engine) -> None:
    """batchq.testing.inline() runs the job at enqueue with enqueue's own checks, reading on the
    app's connection as enqueue does: a Session works there as a driver connection does."""
    from batchq.testing import inline

    with Session(engine) as session, inline(queue) as block:
        queue.enqueue("jobs:noop", {"n": 1}, conn=session)
        queue.enqueue_many("jobs:noop", [{"n": 2}], conn=session)
    assert [outcome.succeeded for outcome in block.ran] == [True, True]
    assert ready(queue) == 0  # run, not written
