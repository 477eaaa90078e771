"""Queue.enqueue_on_commit with an SQLAlchemy Session (issue 24): the app's database is another
one (an SQLite file of the app's) than the queue's, on every backend; the job is written once
the app's transaction commits, never when it rolls back. Django: test_django_conn.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, scoped_session, sessionmaker

from batchq import ConfigError, PayloadError, Queue, QueueFull, TaskError
from tests.support.db import sql


@pytest.fixture
def app_engine(tmp_path: Path) -> Iterator[sa.Engine]:
    """The app's own database: not the queue's."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'app.db'}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE note (n INTEGER NOT NULL)"))
    yield engine
    engine.dispose()


def ready(queue: Queue) -> int:
    return sum(s.ready for s in queue.stats())


def notes(engine: sa.Engine) -> list[int]:
    with engine.connect() as conn:
        return [row[0] for row in conn.execute(sa.text("SELECT n FROM note ORDER BY n"))]


def note(session: Session, n: int) -> None:
    session.execute(sa.text("INSERT INTO note (n) VALUES (:n)"), {"n": n})


def test_the_job_is_written_once_the_session_commits(queue: Queue, app_engine: sa.Engine) -> None:
    with Session(app_engine) as session:
        note(session, 1)
        queue.enqueue_on_commit(session, "jobs:noop", {"n": 1}, queue="mail", priority=3)
        assert ready(queue) == 0  # not before the commit
        session.commit()
        assert ready(queue) == 1 and notes(app_engine) == [1]
        note(session, 2)  # the next transaction of the session runs nothing again
        session.commit()
    assert [(s.queue, s.ready) for s in queue.stats()] == [("mail", 1)]


def test_nothing_is_written_when_the_session_rolls_back(queue: Queue, app_engine: sa.Engine) -> None:
    with Session(app_engine) as session:
        note(session, 1)
        queue.enqueue_on_commit(session, "jobs:noop", {"n": 1})
        session.rollback()
        note(session, 2)
        session.commit()  # a later commit does not bring the dropped job back
    with pytest.raises(RuntimeError), Session(app_engine) as session, session.begin():
        queue.enqueue_on_commit(session, "jobs:noop", {"n": 3})
        raise RuntimeError("the view failed")
    assert ready(queue) == 0 and notes(app_engine) == [2]


def test_a_session_not_yet_begun_is_begun(queue: Queue, app_engine: sa.Engine) -> None:
    session = Session(app_engine)
    assert not session.in_transaction()
    queue.enqueue_on_commit(session, "jobs:noop", {"n": 1})
    assert session.in_transaction()
    session.commit()
    session.close()
    assert ready(queue) == 1


def test_savepoints_released_wait_for_the_outer_commit_rolled_back_drop(
    queue: Queue, app_engine: sa.Engine
) -> None:
    with Session(app_engine) as session:
        queue.enqueue_on_commit(session, "jobs:noop", {"n": 1})
        with session.begin_nested():  # released
            queue.enqueue_on_commit(session, "jobs:noop", {"n": 2})
        assert ready(queue) == 0  # a released savepoint is no commit
        nested = session.begin_nested()
        queue.enqueue_on_commit(session, "jobs:noop", {"n": 3})
        nested.rollback()
        session.commit()
    assert ready(queue) == 2


def test_a_scoped_session(queue: Queue, app_engine: sa.Engine) -> None:
    scoped = scoped_session(sessionmaker(app_engine))
    queue.enqueue_on_commit(scoped, "jobs:noop", {"n": 1})
    scoped.commit()
    scoped.remove()
    assert ready(queue) == 1


def test_bad_input_raises_at_the_call_and_registers_nothing(queue: Queue, app_engine: sa.Engine) -> None:
    with Session(app_engine) as session:
        with pytest.raises(PayloadError):
            queue.enqueue_on_commit(session, "jobs:noop", {"when": object()})
        with pytest.raises(TaskError):
            queue.enqueue_on_commit(session, "os:system", "true")
        with pytest.raises(ConfigError, match="no conn="):
            queue.enqueue_on_commit(session, "jobs:noop", conn=session)
        session.commit()
    assert ready(queue) == 0


def test_the_payload_is_taken_at_the_call(queue: Queue, app_engine: sa.Engine) -> None:
    """Serialised when enqueue_on_commit is called: a change the app makes afterwards to the
    same dict is not what the job carries."""
    payload = {"n": 1}
    with Session(app_engine) as session:
        queue.enqueue_on_commit(session, "jobs:noop", payload)
        payload["n"] = 2
        session.commit()
    [(stored,)] = sql(queue, "SELECT payload FROM batchq_job")
    assert json.loads(bytes(stored)) == {"n": 1}


def test_a_failed_write_after_commit_is_logged_and_raised_and_the_others_run(
    queue: Queue, app_engine: sa.Engine, caplog: pytest.LogCaptureFixture
) -> None:
    """The app's transaction has committed; the job into a full queue cannot be written: the
    failure is logged (with what was lost) and raised from commit(), after the job of the same
    commit that could be written was."""
    queue.configure("full", max_length=1, overflow="reject")
    queue.enqueue("jobs:noop", queue="full")
    with Session(app_engine) as session:
        note(session, 1)
        queue.enqueue_on_commit(session, "jobs:noop", {"n": 1}, queue="full")
        queue.enqueue_on_commit(session, "jobs:noop", {"n": 2}, queue="mail")
        with caplog.at_level(logging.ERROR, logger="batchq.on_commit"), pytest.raises(QueueFull):
            session.commit()
        assert notes(app_engine) == [1]  # the app's data is committed
        assert "enqueueing jobs:noop into queue 'full' was not done" in caplog.text
        note(session, 2)  # the session goes on
        session.commit()
    assert {s.queue: s.ready for s in queue.stats()} == {"full": 1, "mail": 1}
    assert notes(app_engine) == [1, 2]


def test_what_tells_nobody_of_its_commit_is_refused(queue: Queue, app_engine: sa.Engine) -> None:
    with app_engine.connect() as conn, pytest.raises(ConfigError, match="SQLAlchemy Connection or a driver"):
        queue.enqueue_on_commit(conn, "jobs:noop")
    with pytest.raises(ConfigError, match=r"enqueue_on_commit\(\) got builtins\.object"):
        queue.enqueue_on_commit(object(), "jobs:noop")
    assert ready(queue) == 0
