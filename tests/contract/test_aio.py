"""batchq.aio: the async API on every backend, with real servers and the real asyncio drivers.

Through every kind of connection an asyncio app holds (psycopg's AsyncConnection, aiomysql,
asyncmy, aiosqlite, SQLAlchemy's AsyncSession and AsyncConnection on each dialect), a job or a
message exists exactly when the app's transaction commits; without conn=, on the AsyncQueue's
own connections. The enqueue rules are the sync code's (the one copy): unique, bounded and
typed queues, bad input raising before anything is written.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from batchq import ConfigError, MessageQueue, PayloadError, Queue, QueueFull, TaskError
from batchq.aio import AsyncMessageQueue, AsyncQueue
from batchq.core.config import parse_url
from tests.support.aio import KINDS, app_conn
from tests.support.db import SERVER_URLS, autocommit_connection, job_rows, ledger, sql
from tests.support.processes import run_batchq, start_batchq

pytestmark = pytest.mark.asyncio


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """conn_kind: every kind of async connection of the backend under test."""
    if "conn_kind" in metafunc.fixturenames:  # the pairs of another backend are deselected (conftest)
        metafunc.parametrize("conn_kind", sorted({kind for kinds in KINDS.values() for kind in kinds}))


@pytest.fixture
def kind(conn_kind: str) -> str:
    return conn_kind


@pytest_asyncio.fixture
async def aq(db_url: str) -> AsyncIterator[AsyncQueue]:
    q = AsyncQueue(db_url, task_modules=["jobs"], secret=b"test-secret")
    yield q
    await q.close()


@pytest_asyncio.fixture
async def amq(db_url: str) -> AsyncIterator[AsyncMessageQueue]:
    m = AsyncMessageQueue(db_url)
    await m.create_queue("mail")
    yield m
    await m.close()


@pytest.fixture
def look(db_url: str) -> Iterator[Queue]:
    """A sync queue to look at the tables with."""
    q = Queue(db_url, task_modules=["jobs"])
    yield q
    q.close()


def _messages(look: Queue) -> int:
    return int(sql(look, "SELECT COUNT(*) FROM batchq_message")[0][0])


# -- the app's transaction ---------------------------------------------------------------------


async def test_commit_and_rollback_through_each_conn_kind(
    kind: str, db_url: str, aq: AsyncQueue, amq: AsyncMessageQueue, look: Queue
) -> None:
    async with app_conn(kind, db_url) as app:
        await aq.enqueue("jobs:record", {"n": 1}, conn=app.handle)
        await aq.enqueue_many("jobs:record", [{"n": 2}, {"n": 3}], conn=app.handle)
        await amq.send("mail", {"to": "a"}, conn=app.handle)
        assert job_rows(look) == [] and _messages(look) == 0  # not committed: unseen by others
        await app.rollback()
        assert job_rows(look) == [] and _messages(look) == 0

        job_id = await aq.enqueue("jobs:record", {"n": 4}, conn=app.handle)
        assert await aq.enqueue_many("jobs:record", [{"n": 5}, {"n": 6}], conn=app.handle) == 2
        msg_id = await amq.send("mail", {"to": "b"}, conn=app.handle)
        await app.commit()
    rows = job_rows(look)
    assert [row["id"] for row in rows][0] == job_id and len(rows) == 3
    assert _messages(look) == 1
    # batchq opened no connection of its own for any of it.
    assert not aq._app_backend.connected and not amq._app_backend.connected
    # Read and delete in one app transaction: rolled back, the message is there again, unread.
    async with app_conn(kind, db_url) as app:
        [message] = await amq.read("mail", vt=30, conn=app.handle)
        assert message.msg_id == msg_id
        assert await amq.delete("mail", msg_id, conn=app.handle)
        await app.rollback()
    [again] = await amq.read("mail", vt=30)
    assert again.msg_id == msg_id and again.read_ct == 1


async def test_refused_input_leaves_the_app_transaction_going(
    kind: str, db_url: str, aq: AsyncQueue, look: Queue
) -> None:
    async with app_conn(kind, db_url) as app:
        await aq.enqueue("jobs:record", {"n": 1}, conn=app.handle)
        with pytest.raises(PayloadError):
            await aq.enqueue("jobs:record", {"at": datetime.datetime.now()}, conn=app.handle)
        with pytest.raises(PayloadError, match="NUL"):
            await aq.enqueue("jobs:record", {"k": "a\x00b"}, conn=app.handle)
        with pytest.raises(ConfigError, match="queue"):
            await aq.enqueue("jobs:record", {"n": 2}, queue="bad name\n", conn=app.handle)
        with pytest.raises(TaskError):
            await aq.enqueue("os:system", "true", conn=app.handle)
        await aq.enqueue("jobs:record", {"n": 3}, conn=app.handle)  # the transaction goes on
        await app.commit()
    assert len(job_rows(look)) == 2


async def test_a_connection_of_another_kind_is_refused(
    backend_name: str, aq: AsyncQueue, tmp_path: Any
) -> None:
    other = {"sqlite": "psycopg", "postgresql": "aiosqlite", "mysql": "aiosqlite"}[backend_name]
    other_url = SERVER_URLS["postgresql"] if other == "psycopg" else f"sqlite:///{tmp_path / 'other.db'}"
    with pytest.raises(ConfigError, match="conn="):
        await aq.enqueue("jobs:record", {"n": 1}, conn=object())
    import sqlite3

    sync_conn = sqlite3.connect(":memory:")
    with pytest.raises(ConfigError, match="block the event loop"):
        await aq.enqueue("jobs:record", {"n": 1}, conn=sync_conn)
    sync_conn.close()
    async with app_conn(other, other_url) as app:  # an asyncio connection of another database kind
        with pytest.raises(ConfigError, match=f"conn= got an? {other}.*connection to a .* database, but"):
            await aq.enqueue("jobs:record", {"n": 1}, conn=app.handle)


# -- the enqueue rules, through the async path ---------------------------------------------------


@pytest.mark.parametrize("through", ["own", "conn"])
async def test_unique_bounded_and_typed_queues(
    through: str, backend_name: str, db_url: str, aq: AsyncQueue, look: Queue
) -> None:
    kind = KINDS[backend_name][0]
    async with app_conn(kind, db_url) as app:
        conn = app.handle if through == "conn" else None

        async def done() -> None:
            if conn is not None:
                await app.commit()

        first = await aq.enqueue("jobs:record", {"n": 1}, unique_key="k1", conn=conn)
        second = await aq.enqueue("jobs:record", {"n": 2}, unique_key="k1", conn=conn)
        assert first.created and not second.created and second == first
        assert (
            await aq.enqueue_many("jobs:record", [{"n": 3}, {"n": 4}], unique_keys=["k1", "k2"], conn=conn)
            == 1
        )
        await done()

        await aq.configure("full", max_length=1, overflow="reject")
        await aq.enqueue("jobs:record", {"n": 5}, queue="full", conn=conn)
        with pytest.raises(QueueFull):
            await aq.enqueue("jobs:record", {"n": 6}, queue="full", conn=conn)
        await done()

        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        assert await aq.create_queue("typed", schema=schema)
        await aq.enqueue("jobs:record", {"n": 7}, queue="typed", conn=conn)
        with pytest.raises(PayloadError):
            await aq.enqueue("jobs:record", {"n": "seven"}, queue="typed", conn=conn)
        await done()
    queues = sorted((row["queue"], row["status"]) for row in job_rows(look))
    assert queues == [("default", "ready"), ("default", "ready"), ("full", "ready"), ("typed", "ready")]


async def test_bad_input_writes_nothing_on_own_connections(aq: AsyncQueue, look: Queue) -> None:
    with pytest.raises(PayloadError):
        await aq.enqueue_many("jobs:record", [{"n": 1}, {"n": {1, 2}}])
    with pytest.raises(ConfigError):
        await aq.enqueue("jobs:record", {"n": 1}, delay=datetime.datetime(2030, 1, 1))  # naive
    with pytest.raises(ConfigError):
        await aq.enqueue("jobs:record", {"n": 1}, priority=10**9)
    assert job_rows(look) == []


# -- concurrency --------------------------------------------------------------------------------


@pytest.mark.parametrize("pool_size", [1, 4])
async def test_many_concurrent_coroutines_lose_no_job(pool_size: int, db_url: str, look: Queue) -> None:
    async with AsyncQueue(db_url, task_modules=["jobs"], pool_size=pool_size) as aq:
        ids = await asyncio.gather(*[aq.enqueue("jobs:record", {"n": n}) for n in range(200)])
        counts = await asyncio.gather(*[aq.enqueue_many("jobs:record", [{"n": n}] * 5) for n in range(20)])
    assert len(set(ids)) == 200 and sum(counts) == 100
    assert len(job_rows(look)) == 300


async def test_concurrent_app_transactions(
    backend_name: str, db_url: str, aq: AsyncQueue, look: Queue
) -> None:
    """Ten coroutines, each in its own app connection's transaction; odd ones roll back."""
    kind = KINDS[backend_name][1]  # SQLAlchemy's AsyncSession

    async def request(n: int) -> int:
        async with app_conn(kind, db_url) as app:
            job_id = await aq.enqueue("jobs:record", {"n": n}, conn=app.handle)
            await (app.rollback() if n % 2 else app.commit())
            return int(job_id)

    await asyncio.gather(*[request(n) for n in range(10)])
    assert len(job_rows(look)) == 5


async def test_the_event_loop_keeps_running_during_enqueues(db_url: str, aq: AsyncQueue) -> None:
    """A ticker coroutine keeps ticking while 100 enqueues run: nothing blocks the loop."""
    ticks: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            ticks.append(loop.time())
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    start = len(ticks)
    await asyncio.gather(*[aq.enqueue("jobs:record", {"n": n}) for n in range(100)])
    stop.set()
    await task
    assert len(ticks) - start >= 5  # the ticker ran between the enqueues' awaits


# -- cancellation -------------------------------------------------------------------------------


def _hold_job_table(backend_name: str, db_url: str) -> Any:
    """Another session that makes every INSERT into batchq_job wait."""
    if backend_name == "sqlite":
        import sqlite3

        conn: Any = sqlite3.connect(parse_url(db_url).database, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        return conn
    conn = autocommit_connection(db_url)
    cur = conn.cursor()
    if backend_name == "mysql":
        cur.execute("LOCK TABLES batchq_job WRITE")
    elif backend_name == "postgresql":
        cur.execute("BEGIN")
        cur.execute("LOCK TABLE batchq_job IN EXCLUSIVE MODE")
    return conn


async def _jobs_seen(db_url: str) -> int:
    """The jobs in the table, read in a thread: the loop goes on meanwhile (a cancelled app
    connection's socket is closed by the loop; until then its transaction holds the table)."""

    def count() -> int:
        q = Queue(db_url)
        try:
            return len(job_rows(q))
        finally:
            q.close()

    return await asyncio.wait_for(asyncio.to_thread(count), 60)


def _release(backend_name: str, conn: Any) -> None:
    cur = conn.cursor()
    cur.execute("UNLOCK TABLES" if backend_name == "mysql" else "COMMIT")
    conn.close()


async def test_cancelled_in_an_app_transaction_leaves_nothing(
    kind: str, backend_name: str, db_url: str, aq: AsyncQueue, look: Queue
) -> None:
    async with app_conn(kind, db_url) as app:
        holder = _hold_job_table(backend_name, db_url)
        task = asyncio.create_task(aq.enqueue("jobs:record", {"n": 1}, conn=app.handle))
        await asyncio.sleep(0.3)  # the INSERT waits for the lock
        assert not task.done()
        task.cancel()
        # The other session ends a little later (SQLite: aiosqlite's thread cannot stop a
        # statement waiting for the write lock: the cancelled call ends when it does).
        asyncio.get_running_loop().call_later(0.5, _release, backend_name, holder)
        with pytest.raises(asyncio.CancelledError):
            await task
        # The app rolls back (as `async with session.begin()` does on the CancelledError); the
        # connection either does so or says it is broken: nothing of the transaction is kept.
        try:
            await asyncio.wait_for(app.rollback(), 10)
        except Exception:
            pass
    assert await _jobs_seen(db_url) == 0
    await aq.enqueue("jobs:record", {"n": 2})  # the queue goes on
    assert await _jobs_seen(db_url) == 1


async def test_cancelled_on_own_connection_is_all_or_nothing(
    backend_name: str, db_url: str, look: Queue
) -> None:
    async with AsyncQueue(db_url, task_modules=["jobs"], pool_size=1) as aq:
        holder = _hold_job_table(backend_name, db_url)
        task = asyncio.create_task(aq.enqueue_many("jobs:record", [{"n": n} for n in range(50)]))
        await asyncio.sleep(0.3)
        task.cancel()
        asyncio.get_running_loop().call_later(0.5, _release, backend_name, holder)
        with pytest.raises(asyncio.CancelledError):
            await task
        await aq.enqueue("jobs:record", {"n": 99})  # the pool lends a working connection again
        await asyncio.sleep(0.5)
        # The batch is one statement (or one transaction): all or none, never a part. A statement
        # the server had already received may still complete after the cancel (MySQL runs it when
        # the lock is free, though its connection was closed): as when a reply is lost.
        assert await _jobs_seen(db_url) in (1, 51)


# -- a real worker runs what the async API enqueued ----------------------------------------------


@pytest.mark.slow
async def test_a_job_enqueued_async_is_run_by_batchq_run(backend_name: str, db_url: str, look: Queue) -> None:
    kind = KINDS[backend_name][1]  # SQLAlchemy's AsyncSession, as a FastAPI handler holds it
    async with AsyncQueue(db_url, task_modules=["jobs"]) as aq:
        async with app_conn(kind, db_url) as app:
            await aq.enqueue("jobs:record", {"n": 1}, conn=app.handle)
            await app.commit()
            await aq.enqueue("jobs:record", {"n": 2}, conn=app.handle)
            await app.rollback()
        await aq.enqueue("jobs:record", {"n": 3})
    result = await asyncio.to_thread(run_batchq, db_url, "run", "--max-seconds", "20")
    assert result.returncode == 0, result.stderr
    assert ledger(look) == [1, 3]
    assert job_rows(look) == []


@pytest.mark.slow
async def test_result_waits_for_a_real_worker(db_url: str) -> None:
    """AsyncQueue.result(wait=) polls on the loop while a `batchq run` process runs the job."""
    async with AsyncQueue(db_url, task_modules=["result_jobs"]) as aq:
        payload = {"sleep": 0.3, "value": 7}
        job = await aq.enqueue("result_jobs:sleeps_then_returns", payload, keep_result=True)
        assert (await aq.result(job)).status == "waiting"
        assert (await aq.result(job, wait=0)).status == "waiting"
        worker = start_batchq(db_url, "run", "--max-jobs", "1", BATCHQ_TASK_MODULES="result_jobs")
        try:
            result = await aq.result(job, wait=60)
        finally:
            assert await asyncio.to_thread(worker.wait, 60) == 0
        assert (result.status, result.value) == ("succeeded", 7)
        assert (await aq.result(10**12)).status == "unknown"
        with pytest.raises(ConfigError, match="bad wait"):
            await aq.result(job, wait=-1)


# -- the message queue's own calls ---------------------------------------------------------------


async def test_message_queue_calls(amq: AsyncMessageQueue, db_url: str) -> None:
    ids = await amq.send_batch("mail", [{"n": 1}, {"n": 2}, {"n": 3}])
    assert len(ids) == 3
    got = await amq.read("mail", vt=30, qty=2)
    assert [m.msg_id for m in got] == ids[:2]
    assert await amq.archive("mail", ids[0], read_ct=got[0].read_ct)
    assert await amq.delete_batch("mail", [ids[1]]) == [ids[1]]
    popped = await amq.pop("mail")
    assert popped is not None and popped.msg_id == ids[2]
    assert (await amq.metrics("mail")).queue_length == 0
    # A poll waits on the loop: a send from another coroutine meanwhile is what it returns.
    poll = asyncio.create_task(amq.read_with_poll("mail", vt=30, max_poll_seconds=10, poll_interval_ms=50))
    await asyncio.sleep(0.2)
    assert not poll.done()
    sent = await amq.send("mail", {"n": 4})
    assert [m.msg_id for m in await poll] == [sent]
    sync = MessageQueue(db_url)
    try:
        assert [a.msg_id for a in sync.read_archive("mail")] == [ids[0]]
    finally:
        sync.close()


async def test_message_queue_newer_pgmq_calls(amq: AsyncMessageQueue) -> None:
    """pop(qty), read_grouped_head and topic routing, awaited."""
    sent = await amq.send_batch("mail", ["a1", "a2", "b1"], headers=[{"x-pgmq-group": g} for g in "aab"])
    assert [m.msg_id for m in await amq.read_grouped_head("mail", vt=30, qty=5)] == [sent[0], sent[2]]
    assert await amq.read_grouped_head_with_poll("mail", vt=30, qty=5, max_poll_seconds=0.2) == []
    assert [m.msg_id for m in await amq.pop("mail", 5)] == [sent[1]]  # pop knows no groups: a2 is visible
    await amq.create_queue("logs")
    assert await amq.bind_topic("logs.#", "logs") is True
    assert [b.queue for b in await amq.test_routing("logs.api")] == ["logs"]
    assert await amq.send_topic("logs.api", {"n": 1}) == 1
    assert [queue for queue, _ in await amq.send_batch_topic("logs.db", [1, 2])] == ["logs", "logs"]
    assert len(await amq.pop("logs", 10)) == 3
    assert [b.pattern for b in await amq.list_topic_bindings()] == ["logs.#"]
    assert await amq.unbind_topic("logs.#", "logs") is True


@pytest.mark.backends("mysql")
async def test_mysql_drivers_of_its_own(db_url: str, look: Queue) -> None:
    """Both MySQL asyncio drivers for the AsyncQueue's own connections (the others have one)."""
    for driver in ("asyncmy", "aiomysql"):
        async with AsyncQueue(db_url, task_modules=["jobs"], mysql_driver=driver) as aq:
            assert await aq.enqueue_many("jobs:record", [{"n": 1}, {"n": 2}]) == 2
            job_id = await aq.enqueue("jobs:record", {"n": 3}, unique_key=f"u-{driver}")
            assert (await aq.explain(job_id)).state == "waiting"
    assert len(job_rows(look)) == 6
