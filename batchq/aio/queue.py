"""AsyncQueue and AsyncMessageQueue: the sync API's calls, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Generic, TypeVar, overload

from ..backends import Backend, Database
from ..core.config import DatabaseURL, parse_duration
from ..errors import ConfigError
from ..jobs.hooks import EnqueueMiddleware
from ..jobs.results import FIRST_POLL_SECONDS, MAX_POLL_SECONDS, JobResult, check_job_id, check_wait
from ..mq import MessageQueue, TopicBinding
from ..mq.records import Message, QueueMetrics
from ..ops.explain import Explanation
from ..queue import Enqueued, Queue, QueueStats, Task
from .appconn import app_connection
from .backends import async_backend
from .bridge import greenlet_spawn

T = TypeVar("T")
API = TypeVar("API", Queue, MessageQueue)

# Connections of its own per AsyncQueue: 4 on a server (bench/async_enqueue.py: 200 concurrent
# enqueues ~10% faster than with 1), 1 on SQLite (one writer at a time: more only contend).
DEFAULT_POOL_SIZE = 4

# The backend lent to the call running in this task (its greenlet shares the task's context).
_lent: ContextVar[Backend | None] = ContextVar("batchq_aio_backend", default=None)


class _LentDatabase(Database):
    """The database of the sync object an async one drives: its backend is the one lent to the
    call at hand (one connection per call at a time), not one per thread: every coroutine of
    the loop runs on the same thread."""

    @property
    def backend(self) -> Backend:
        backend = _lent.get()
        if backend is None:
            raise RuntimeError("the sync object under batchq.aio was used outside an await of it")
        return backend

    def close(self) -> None:  # the pool closes its connections
        pass


class _Pool:
    """Up to ``size`` backends, each with its asyncio connection (opened on first use), lent to
    one call at a time: a connection runs one statement at a time, so concurrent calls each
    need their own. A call cancelled mid-statement may leave its connection in any state: that
    backend is closed, not lent again."""

    def __init__(self, make: Callable[[], Backend], size: int) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ConfigError(f"pool_size must be an int of at least 1, not {size!r}")
        self._make = make
        self._idle: list[Backend] = []
        self._slots = asyncio.Semaphore(size)

    @asynccontextmanager
    async def lend(self) -> Any:
        async with self._slots:
            backend = self._idle.pop() if self._idle else self._make()
            try:
                yield backend
            except asyncio.CancelledError:
                await _close(backend)  # perhaps mid-statement: its connection is not lent again
                raise
            except Exception:
                self._idle.append(backend)  # an error: the backend has dropped a lost connection
                raise
            self._idle.append(backend)

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for backend in idle:
            await _close(backend)


async def _close(backend: Backend) -> None:
    try:
        await greenlet_spawn(backend.close)
    except Exception:
        pass


class _Async(Generic[API]):
    """What AsyncQueue and AsyncMessageQueue share: the sync object, the pool, and the way a
    call runs (a greenlet, with a backend lent to it)."""

    sync: API

    def _setup(self, sync: API, url_text: str | None, pool_size: int | None, mysql_driver: str) -> None:
        self.sync = sync
        url = sync.url
        if pool_size is None:
            pool_size = 1 if url.dialect == "sqlite" else DEFAULT_POOL_SIZE
        sync.database = _LentDatabase(url_text)
        self._pool = _Pool(lambda: async_backend(url, mysql_driver), pool_size)
        # For conn= calls: never connected (the caller's connection runs every statement), one for
        # all of them, so that what it learns of a connection (MySQL: its limits) is kept.
        self._app_backend = async_backend(url, mysql_driver)

    @property
    def url(self) -> DatabaseURL:
        return self.sync.url

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.url)!r})"

    async def _call(self, call: Callable[[API, Any], T], conn: Any = None) -> T:
        """``call(sync, conn)`` in a greenlet: on ``conn`` (the caller's, bridged) if given, else
        with a connection of the pool."""
        if conn is not None:
            bridged = await app_connection(conn)
            return await self._in_greenlet(self._app_backend, call, bridged)
        async with self._pool.lend() as backend:
            return await self._in_greenlet(backend, call, None)

    async def _in_greenlet(self, backend: Backend, call: Callable[[API, Any], T], conn: Any) -> T:
        token = _lent.set(backend)
        try:
            return await greenlet_spawn(call, self.sync, conn)
        finally:
            _lent.reset(token)

    async def run_sync(self, call: Callable[[API], T]) -> T:
        """Any method of the sync object, on a connection of the pool, without blocking the loop:
        ``await aq.run_sync(lambda q: q.history(queue="mail"))``."""
        return await self._call(lambda sync, _: call(sync))

    async def init_db(self) -> list[str]:
        """Create or migrate the schema (idempotent); returns the migrations applied."""
        return await self._call(lambda sync, _: sync.init_db())

    async def close(self) -> None:
        """Close the pool's connections (the next call opens new ones)."""
        await self._pool.close()

    async def __aenter__(self: Any) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncQueue(_Async[Queue]):
    """``batchq.Queue`` for asyncio: the same arguments, calls and errors, awaited.

    ``pool_size``: connections of its own (opened on first use) for calls without ``conn=``;
    more concurrent calls wait for one (default 4; 1 on SQLite, which has one writer).
    ``mysql_driver``: "asyncmy" (the default) or "aiomysql".
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        secret: str | bytes | None = None,
        task_modules: str | Iterable[str] | None = None,
        pool_size: int | None = None,
        mysql_driver: str = "asyncmy",
        enqueue_middleware: Iterable[EnqueueMiddleware] = (),
    ) -> None:
        sync = Queue(url, secret=secret, task_modules=task_modules, enqueue_middleware=enqueue_middleware)
        self._setup(sync, url, pool_size, mysql_driver)

    async def enqueue(self, task: Task, payload: Any = None, *, conn: Any = None, **options: Any) -> Enqueued:
        """``Queue.enqueue``; with ``conn=`` in the caller's transaction (never committed here)."""
        return await self._call(lambda q, c: q.enqueue(task, payload, conn=c, **options), conn)

    async def enqueue_many(
        self, task: Task, payloads: Iterable[Any], *, conn: Any = None, **options: Any
    ) -> int:
        """``Queue.enqueue_many``: all or none; returns how many were written."""
        return await self._call(lambda q, c: q.enqueue_many(task, payloads, conn=c, **options), conn)

    async def result(self, job_id: int, *, wait: float | None = None) -> JobResult:
        """``Queue.result``: a job's state, and its outcome once it ended. With ``wait``
        (seconds), read again until the job has ended or the time is up, polled (every 50 ms,
        doubling to 1 s) on every backend; the waits are the loop's, holding no connection."""
        job_id = check_job_id(job_id)
        deadline = None if wait is None else asyncio.get_running_loop().time() + check_wait(wait)
        pause = FIRST_POLL_SECONDS
        while True:
            result = await self._call(lambda q, _: q.result(job_id))
            if deadline is None or result.finished:
                return result
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return result
            await asyncio.sleep(min(pause, remaining))
            pause = min(pause * 2, MAX_POLL_SECONDS)

    async def cancel(self, job_id: int) -> bool:
        """``Queue.cancel``: True only if nobody had claimed the job."""
        return await self._call(lambda q, _: q.cancel(job_id))

    async def cancel_where(self, queue: str, **options: Any) -> int:
        return await self._call(lambda q, _: q.cancel_where(queue, **options))

    async def explain(self, job_id: int) -> Explanation:
        """``Queue.explain``: where a job stands (its state, what it waits for)."""
        return await self._call(lambda q, _: q.explain(job_id))

    async def stats(self) -> list[QueueStats]:
        return await self._call(lambda q, _: q.stats())

    async def pause(self, queue: str) -> None:
        await self._call(lambda q, _: q.pause(queue))

    async def resume(self, queue: str) -> None:
        await self._call(lambda q, _: q.resume(queue))

    async def purge(self, queue: str) -> int:
        return await self._call(lambda q, _: q.purge(queue))

    async def configure(self, queue: str, **settings: Any) -> Any:
        return await self._call(lambda q, _: q.configure(queue, **settings))

    async def create_queue(self, queue: str, **options: Any) -> bool:
        return await self._call(lambda q, _: q.create_queue(queue, **options))


class AsyncMessageQueue(_Async[MessageQueue]):
    """``batchq.MessageQueue`` for asyncio: the same arguments, calls and errors, awaited; every
    call that takes ``conn=`` there takes the async connections here (see AsyncQueue)."""

    def __init__(
        self, url: str | None = None, *, pool_size: int | None = None, mysql_driver: str = "asyncmy"
    ) -> None:
        self._setup(MessageQueue(url), url, pool_size, mysql_driver)

    async def create_queue(self, queue: str, *, conn: Any = None, **options: Any) -> bool:
        return await self._call(lambda m, c: m.create_queue(queue, conn=c, **options), conn)

    async def drop_queue(self, queue: str, *, conn: Any = None) -> bool:
        return await self._call(lambda m, c: m.drop_queue(queue, conn=c), conn)

    async def purge_queue(self, queue: str, *, conn: Any = None) -> int:
        return await self._call(lambda m, c: m.purge_queue(queue, conn=c), conn)

    async def send(self, queue: str, message: Any, *, conn: Any = None, **options: Any) -> int:
        """``MessageQueue.send``: the new message's id."""
        return await self._call(lambda m, c: m.send(queue, message, conn=c, **options), conn)

    async def send_batch(
        self, queue: str, messages: Sequence[Any], *, conn: Any = None, **options: Any
    ) -> list[int]:
        return await self._call(lambda m, c: m.send_batch(queue, messages, conn=c, **options), conn)

    async def read(self, queue: str, *, conn: Any = None, **options: Any) -> list[Message]:
        """``MessageQueue.read`` (vt=, qty=, where=): the messages now hidden from other readers."""
        return await self._call(lambda m, c: m.read(queue, conn=c, **options), conn)

    async def read_with_poll(
        self,
        queue: str,
        vt: Any = 30,
        qty: int = 1,
        max_poll_seconds: Any = 5,
        poll_interval_ms: int = 100,
        *,
        where: Any = None,
    ) -> list[Message]:
        """``MessageQueue.read_with_poll``: ``read``, again every ``poll_interval_ms`` until a
        message comes or ``max_poll_seconds`` are up. The waits are the loop's, holding no
        connection (a pool of one, on SQLite, stays free for a send meanwhile)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + parse_duration(max_poll_seconds, "max_poll_seconds")
        interval = parse_duration(poll_interval_ms, "poll_interval_ms") / 1000
        while True:
            messages = await self.read(queue, vt=vt, qty=qty, where=where)
            if messages or loop.time() >= deadline:
                return messages
            await asyncio.sleep(max(0.0, min(interval, deadline - loop.time())))

    @overload
    async def pop(self, queue: str, qty: None = None, *, conn: Any = None) -> Message | None: ...

    @overload
    async def pop(self, queue: str, qty: int, *, conn: Any = None) -> list[Message]: ...

    async def pop(
        self, queue: str, qty: int | None = None, *, conn: Any = None
    ) -> Message | None | list[Message]:
        """``MessageQueue.pop``: the oldest visible message, deleted; with ``qty``, a list."""
        if qty is None:
            return await self._call(lambda m, c: m.pop(queue, conn=c), conn)
        return await self._call(lambda m, c: m.pop(queue, qty, conn=c), conn)

    async def read_grouped_head(self, queue: str, *, conn: Any = None, **options: Any) -> list[Message]:
        """``MessageQueue.read_grouped_head`` (vt=, qty=): the oldest message of up to qty groups."""
        return await self._call(lambda m, c: m.read_grouped_head(queue, conn=c, **options), conn)

    async def read_grouped_head_with_poll(
        self, queue: str, vt: Any = 30, qty: int = 1, max_poll_seconds: Any = 5, poll_interval_ms: int = 100
    ) -> list[Message]:
        """``MessageQueue.read_grouped_head_with_poll``, the waits on the loop (as read_with_poll)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + parse_duration(max_poll_seconds, "max_poll_seconds")
        interval = parse_duration(poll_interval_ms, "poll_interval_ms") / 1000
        while True:
            messages = await self.read_grouped_head(queue, vt=vt, qty=qty)
            if messages or loop.time() >= deadline:
                return messages
            await asyncio.sleep(max(0.0, min(interval, deadline - loop.time())))

    async def bind_topic(self, pattern: str, queue: str) -> bool:
        return await self._call(lambda m, _: m.bind_topic(pattern, queue))

    async def unbind_topic(self, pattern: str, queue: str) -> bool:
        return await self._call(lambda m, _: m.unbind_topic(pattern, queue))

    async def list_topic_bindings(self, queue: str | None = None) -> list[TopicBinding]:
        return await self._call(lambda m, _: m.list_topic_bindings(queue))

    async def test_routing(self, routing_key: str) -> list[TopicBinding]:
        return await self._call(lambda m, _: m.test_routing(routing_key))

    test_routing.__test__ = False  # type: ignore[attr-defined]

    async def send_topic(self, routing_key: str, message: Any, *, conn: Any = None, **options: Any) -> int:
        """``MessageQueue.send_topic``: how many queues got a copy."""
        return await self._call(lambda m, c: m.send_topic(routing_key, message, conn=c, **options), conn)

    async def send_batch_topic(
        self, routing_key: str, messages: Sequence[Any], *, conn: Any = None, **options: Any
    ) -> list[tuple[str, int]]:
        return await self._call(
            lambda m, c: m.send_batch_topic(routing_key, messages, conn=c, **options), conn
        )

    async def delete(self, queue: str, msg_id: int, *, conn: Any = None, **options: Any) -> bool:
        return await self._call(lambda m, c: m.delete(queue, msg_id, conn=c, **options), conn)

    async def delete_batch(self, queue: str, msg_ids: Iterable[int], *, conn: Any = None) -> list[int]:
        return await self._call(lambda m, c: m.delete_batch(queue, msg_ids, conn=c), conn)

    async def archive(self, queue: str, msg_id: int, *, conn: Any = None, **options: Any) -> bool:
        return await self._call(lambda m, c: m.archive(queue, msg_id, conn=c, **options), conn)

    async def archive_batch(self, queue: str, msg_ids: Iterable[int], *, conn: Any = None) -> list[int]:
        return await self._call(lambda m, c: m.archive_batch(queue, msg_ids, conn=c), conn)

    async def set_vt(self, queue: str, msg_id: int, vt: Any, *, conn: Any = None) -> Message | None:
        return await self._call(lambda m, c: m.set_vt(queue, msg_id, vt, conn=c), conn)

    async def get(self, queue: str, msg_id: int, *, conn: Any = None) -> Message | None:
        return await self._call(lambda m, c: m.get(queue, msg_id, conn=c), conn)

    async def metrics(self, queue: str) -> QueueMetrics:
        return await self._call(lambda m, _: m.metrics(queue))
