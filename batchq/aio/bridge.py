"""asyncio drivers' connections, presented to batchq's sync code as the sync drivers it knows.

batchq's enqueue and message code is sync, and stays the one copy: batchq.aio runs it in a
greenlet (SQLAlchemy's ``greenlet_spawn``, the bridge its asyncio extension runs its own sync
core on), and the connections below turn each driver call the sync code makes (``execute``,
``fetchone``, ``commit``...) into an ``await`` of the asyncio driver's, which switches back to
the event loop until the result is there. Nothing blocks the loop; no thread is involved.

One class per asyncio driver: psycopg 3's ``AsyncConnection`` (as psycopg), aiomysql and
asyncmy (as PyMySQL: both are PyMySQL's protocol, escaping and ``mogrify``), aiosqlite (as
sqlite3). A bridged connection says which dialect it stands for (``batchq_bridged_dialect``):
the backends accept it for ``conn=`` as they accept their own driver's.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Awaitable
from typing import Any, ClassVar, TypeVar

import pymysql
from sqlalchemy import util as _sa_util

from ..errors import ConfigError

T = TypeVar("T")

greenlet_spawn = _sa_util.greenlet_spawn
# SQLAlchemy 2.1 renamed await_only to await_ (the old name goes in 2.2).
await_ = getattr(_sa_util, "await_", None) or _sa_util.await_only

# SQLITE_MAX_VARIABLE_NUMBER's default since SQLite 3.32 (aiosqlite has no getlimit()).
SQLITE_MAX_VARIABLES = 32766


class BridgedCursor:
    """A sync cursor whose calls await the asyncio driver's cursor."""

    def __init__(self, connection: BridgedConnection, cursor: Any) -> None:
        self.connection = connection
        self._cursor = cursor

    def __getattr__(self, name: str) -> Any:  # rowcount, lastrowid, description, mogrify
        return getattr(self._cursor, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("connection", "_cursor"):
            object.__setattr__(self, name, value)
        else:  # row_factory (sqlite)
            setattr(self._cursor, name, value)

    def execute(self, sql: Any, params: Any = None) -> Any:
        result = self.connection.wait(self._cursor.execute(sql, params))
        return self if result is self._cursor else result  # PyMySQL's: the row count

    def executemany(self, sql: Any, rows: Any) -> Any:
        result = self.connection.wait(self._cursor.executemany(sql, rows))
        return self if result is self._cursor else result

    def fetchone(self) -> Any:
        return self.connection.wait(self._cursor.fetchone())  # aiomysql: a Future

    def fetchall(self) -> Any:
        return self.connection.wait(self._cursor.fetchall())

    def close(self) -> None:
        self.connection.wait(self._cursor.close())

    def __enter__(self) -> BridgedCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BridgedConnection:
    """A sync connection whose calls await the asyncio driver's connection ``driver``."""

    batchq_bridged_dialect: ClassVar[str]
    bridged_driver: ClassVar[str]  # for messages

    def __init__(self, driver: Any, *, weak: bool = False) -> None:
        # An application's connection weakly: its bridge is kept (in _bridges) for as long as
        # the connection lives, and must not keep it alive.
        try:
            self._driver: Any = weakref.ref(driver) if weak else lambda: driver
        except TypeError:
            self._driver = lambda: driver

    @property
    def driver_connection(self) -> Any:
        return self._driver()

    def __repr__(self) -> str:
        return f"<batchq bridge to {self.driver_connection!r}>"

    def __getattr__(self, name: str) -> Any:  # sync attributes: info, adapters, closed, escape...
        return getattr(self.driver_connection, name)

    def wait(self, awaitable: Awaitable[T]) -> T:
        """Await in the greenlet batchq.aio runs the sync code in."""
        return await_(awaitable)

    def _driver_cursor(self, *args: Any, **kwargs: Any) -> Any:
        return self.wait(self.driver_connection.cursor(*args, **kwargs))

    def cursor(self, *args: Any, **kwargs: Any) -> BridgedCursor:
        return BridgedCursor(self, self._driver_cursor(*args, **kwargs))

    def execute(self, sql: str, params: Any = None) -> BridgedCursor:
        cur = self.cursor()
        cur.execute(sql, params)
        return cur

    def begin(self) -> None:
        self.wait(self.driver_connection.begin())

    def commit(self) -> None:
        self.wait(self.driver_connection.commit())

    def rollback(self) -> None:
        self.wait(self.driver_connection.rollback())

    def close(self) -> None:
        closed = self.driver_connection.close()  # aiomysql's and asyncmy's are not coroutines
        if inspect.isawaitable(closed):
            self.wait(closed)


class PsycopgBridge(BridgedConnection):
    batchq_bridged_dialect = "postgresql"
    bridged_driver = "psycopg AsyncConnection"

    def _driver_cursor(self, *args: Any, **kwargs: Any) -> Any:
        return self.driver_connection.cursor(*args, **kwargs)  # not a coroutine


class MySQLCursor(BridgedCursor):
    """aiomysql's or asyncmy's cursor, its values escaped by the bridge (MySQLBridge.escape) as
    PyMySQL escapes them, the statement sent without parameters: aiomysql 0.3 escapes bytes
    with a function PyMySQL 1.1 removed (a TypeError for every bytes value), and neither
    escapes a list (batchq's ``IN %(ids)s``)."""

    def mogrify(self, query: str, args: Any = None) -> str:
        if args is None:
            return query
        escape = self.connection.escape
        if isinstance(args, dict):
            return query % {key: escape(value) for key, value in args.items()}
        return query % tuple(escape(value) for value in args)

    def execute(self, sql: Any, params: Any = None) -> Any:
        if params is not None:
            sql = self.mogrify(sql, params)
        return self.connection.wait(self._cursor.execute(sql))


class MySQLBridge(BridgedConnection):
    batchq_bridged_dialect = "mysql"

    def cursor(self, *args: Any, **kwargs: Any) -> BridgedCursor:
        return MySQLCursor(self, self._driver_cursor(*args, **kwargs))

    def escape(self, obj: Any) -> str:
        if isinstance(obj, (bytes, bytearray)):
            return f"X'{obj.hex()}'"
        if type(obj) in (tuple, list, set, frozenset):  # as PyMySQL: (a,b,c), for IN
            return "(" + ",".join(self.escape(item) for item in obj) + ")"
        return str(self.driver_connection.escape(obj))


class AiomysqlBridge(MySQLBridge):
    bridged_driver = "aiomysql"

    def _driver_cursor(self, *classes: Any) -> Any:
        import aiomysql  # type: ignore[import-untyped]

        # batchq asks for PyMySQL's plain (buffered tuple) cursor: aiomysql's own.
        mapped = [aiomysql.Cursor if cls is pymysql.cursors.Cursor else cls for cls in classes]
        return self.wait(self.driver_connection.cursor(*mapped))


class AsyncmyBridge(MySQLBridge):
    bridged_driver = "asyncmy"

    def _driver_cursor(self, cls: Any = None) -> Any:
        from asyncmy.cursors import Cursor

        return self.driver_connection.cursor(Cursor if cls is pymysql.cursors.Cursor else cls)

    def wait(self, awaitable: Awaitable[T]) -> T:
        """asyncmy raises its own copies of PyMySQL's errors: raise PyMySQL's (same class name,
        same (code, message)), which the MySQL backend translates."""
        from asyncmy import errors

        try:
            return await_(awaitable)
        except errors.MySQLError as exc:
            raise getattr(pymysql.err, type(exc).__name__, pymysql.err.Error)(*exc.args) from exc

    @property
    def encoding(self) -> str:
        return str(self.driver_connection._encoding)

    @property
    def server_thread_id(self) -> Any:
        return self.driver_connection.thread_id()


class AiosqliteBridge(BridgedConnection):
    batchq_bridged_dialect = "sqlite"
    bridged_driver = "aiosqlite"

    def getlimit(self, which: int) -> int:
        return SQLITE_MAX_VARIABLES

    @property
    def text_factory(self) -> Any:
        return self.driver_connection.text_factory

    @text_factory.setter
    def text_factory(self, factory: Any) -> None:
        self.driver_connection.text_factory = factory


def _bridge_class(driver: Any) -> type[BridgedConnection] | None:
    module = type(driver).__module__.split(".")[0]
    if module == "psycopg":
        import psycopg

        return PsycopgBridge if isinstance(driver, psycopg.AsyncConnection) else None
    if module == "aiomysql":
        import aiomysql  # type: ignore[import-untyped]

        return AiomysqlBridge if isinstance(driver, aiomysql.Connection) else None
    if module == "asyncmy":
        import asyncmy

        return AsyncmyBridge if isinstance(driver, asyncmy.Connection) else None
    if module == "aiosqlite":
        import aiosqlite

        return AiosqliteBridge if isinstance(driver, aiosqlite.Connection) else None
    return None


# One bridge per driver connection while it lives: the MySQL backend keeps what it learnt of a
# connection (its max_allowed_packet, its escaped statement) by connection.
_bridges: weakref.WeakKeyDictionary[Any, BridgedConnection] = weakref.WeakKeyDictionary()


def bridge(driver: Any) -> BridgedConnection:
    """The sync face of an asyncio driver's connection; ConfigError for anything else."""
    if isinstance(driver, BridgedConnection):
        return driver
    try:
        known = _bridges.get(driver)
    except TypeError:  # not weakly referable
        known = None
    if known is not None:
        return known
    cls = _bridge_class(driver)
    if cls is None:
        raise ConfigError(
            f"conn= of batchq.aio must be an asyncio connection: psycopg's AsyncConnection, aiomysql "
            f"or asyncmy, aiosqlite, or SQLAlchemy's AsyncConnection / AsyncSession; not {driver!r} "
            "(a sync connection would block the event loop: use batchq.Queue for it)"
        )
    bridged = cls(driver, weak=True)
    try:
        _bridges[driver] = bridged
    except TypeError:
        pass
    return bridged
