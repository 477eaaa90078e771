"""What the application holds -> the driver connection batchq writes on, and its dialect.

``conn=`` (enqueue, enqueue_many, every MessageQueue call that writes, publish) takes what a web
app holds: a Django connection (``django.db.connection``, ``connections[alias]``), an SQLAlchemy
2.x ``Connection`` or ``Session`` (``scoped_session`` too), or a driver's own connection
(PyMySQL, mysqlclient, psycopg 3, sqlite3). batchq then runs its statements on the driver
connection underneath, inside the app's transaction: it never commits, rolls back or changes
autocommit there, so the job or message exists exactly when the app's transaction commits.

Django and SQLAlchemy are recognised by their classes, imported only when the app has imported
the framework already (it must have, to hold one of its objects): the core needs neither.
"""

from __future__ import annotations

import functools
import sqlite3
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

import pymysql.connections

from ..errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

DIALECT_NAMES = {"mysql": "MySQL/MariaDB", "postgresql": "PostgreSQL", "sqlite": "SQLite"}
DRIVERS = {
    "mysql": "PyMySQL or mysqlclient (MySQLdb)",
    "postgresql": "psycopg (3)",
    "sqlite": "sqlite3",
}
# Framework dialect names -> batchq's (SQLAlchemy names MariaDB apart; Django calls it mysql).
_FRAMEWORK_DIALECTS = {"mysql": "mysql", "mariadb": "mysql", "postgresql": "postgresql", "sqlite": "sqlite"}

# A driver connection's class -> its dialect, learnt on first sight: the common case (the same
# class again and again) costs one dict lookup.
_driver_dialects: dict[type, str | None] = {}


def driver_connection(conn: Any, dialect: str, where: object = "") -> Any:
    """The DB-API connection under ``conn`` for a queue of ``dialect`` (its database at
    ``where``, for the message). ConfigError, before anything is written, for an object batchq
    cannot write on or a connection to a database of another dialect."""
    cls = type(conn)
    found = _dialect_of(cls)
    if found is not None:
        if found != dialect:
            raise _other_dialect(f"a {_driver_name(cls)} connection", found, dialect, where)
        return conn
    unwrap = _framework_unwrapper(conn)
    if unwrap is None:
        raise ConfigError(
            f"conn= got {cls.__module__}.{cls.__qualname__} ({conn!r}): pass what the app holds on "
            f"the queue's {DIALECT_NAMES[dialect]} database: a Django connection, an SQLAlchemy "
            f"Connection or Session, or a {DRIVERS[dialect]} connection"
        )
    return unwrap(conn, dialect, where)


def takes_app_conn(method: F) -> F:
    """Give ``method`` (whose first argument has ``.backend``) the driver connection under the
    ``conn=`` it was called with, checked against its queue's dialect."""

    @functools.wraps(method)
    def with_driver_connection(holder: Any, *args: Any, conn: Any = None, **kwargs: Any) -> Any:
        if conn is not None:
            conn = holder.backend.app_connection(conn)
        return method(holder, *args, conn=conn, **kwargs)

    return cast(F, with_driver_connection)


# -- drivers -----------------------------------------------------------------------------


def _dialect_of(cls: type) -> str | None:
    """The dialect of a driver connection class (None: not one batchq writes on)."""
    try:
        return _driver_dialects[cls]
    except KeyError:
        return _learn_driver(cls)


def _learn_driver(cls: type) -> str | None:
    dialect = None
    if issubclass(cls, pymysql.connections.Connection) or _is_subclass(
        cls, "MySQLdb.connections", "Connection"
    ):
        dialect = "mysql"
    elif _is_subclass(cls, "psycopg", "Connection"):
        dialect = "postgresql"
    elif issubclass(cls, sqlite3.Connection):
        dialect = "sqlite"
    else:  # an asyncio driver's connection that batchq.aio presents as its dialect's sync driver
        dialect = getattr(cls, "batchq_bridged_dialect", None)
    _driver_dialects[cls] = dialect
    return dialect


def _is_subclass(cls: type, module: str, name: str) -> bool:
    """issubclass(cls, module.name), for a module the application has imported (else False)."""
    loaded = sys.modules.get(module)
    base = getattr(loaded, name, None)
    return isinstance(base, type) and issubclass(cls, base)


_DRIVER_NAMES = {"pymysql": "PyMySQL", "MySQLdb": "mysqlclient (MySQLdb)", "psycopg": "psycopg"}


def _driver_name(cls: type) -> str:
    bridged = getattr(cls, "bridged_driver", None)  # batchq.aio's bridge to an asyncio driver
    if bridged is not None:
        return str(bridged)
    package = cls.__module__.split(".")[0]
    return _DRIVER_NAMES.get(package, package)


def _driver_of(raw: Any, what: str, dialect: str, where: object) -> Any:
    """The framework's driver connection ``raw``, if batchq writes on that driver."""
    found = _dialect_of(type(raw))
    if found is None:
        cls = type(raw)
        raise ConfigError(
            f"conn= got {what}, whose driver connection is {cls.__module__}.{cls.__qualname__}: batchq "
            f"writes on {DRIVERS[dialect]} for a {DIALECT_NAMES[dialect]} queue; configure the framework "
            f"with that driver"
        )
    if found != dialect:
        raise _other_dialect(what, found, dialect, where)
    return raw


def _other_dialect(what: str, found: str, dialect: str, where: object) -> ConfigError:
    at = f" ({where})" if where else ""
    return ConfigError(
        f"conn= got {what} to a {DIALECT_NAMES[found]} database, but this queue's database is "
        f"{DIALECT_NAMES[dialect]}{at}: pass a connection to the queue's database (a write joins "
        "only a transaction of its own database); to write a job once the app's transaction "
        "commits, use enqueue_on_commit()"
    )


# -- frameworks ----------------------------------------------------------------------------


def _framework_unwrapper(conn: Any) -> Callable[[Any, str, object], Any] | None:
    if is_django_connection(conn):
        return _django
    if "sqlalchemy" in sys.modules:
        from sqlalchemy.engine import Connection, Engine
        from sqlalchemy.orm import Session, scoped_session

        if isinstance(conn, Connection):
            return _sqlalchemy_connection
        if isinstance(conn, (Session, scoped_session)):
            return _sqlalchemy_session
        if isinstance(conn, Engine):
            return _sqlalchemy_engine
    return None


def is_django_connection(conn: Any) -> bool:
    """A Django DatabaseWrapper, or the ConnectionProxy of ``django.db.connection``."""
    if "django.db" not in sys.modules:
        return False
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.utils.connection import ConnectionProxy

    return isinstance(conn, (BaseDatabaseWrapper, ConnectionProxy))


def _django(conn: Any, dialect: str, where: object) -> Any:
    """The connection's driver connection, opened if need be. Inside atomic() the job joins the
    block's transaction; outside, Django's autocommit writes it at once. A transaction that an
    error has spoiled is refused as Django refuses any query in it."""
    what = f"a Django connection ({conn.alias!r})"
    found = _FRAMEWORK_DIALECTS.get(conn.vendor)
    if found != dialect:
        if found is None:
            raise ConfigError(f"conn= got {what} to a {conn.vendor} database: batchq has no backend for it")
        raise _other_dialect(what, found, dialect, where)
    conn.validate_no_broken_transaction()  # TransactionManagementError, as Django's own cursor
    conn.ensure_connection()
    return _driver_of(conn.connection, what, dialect, where)


def _sqlalchemy_connection(conn: Any, dialect: str, where: object) -> Any:
    """The Connection's DB-API connection. A Connection outside a transaction is begun, as its
    own next execute() would (autobegin): else its commit() would not commit our write."""
    what = f"an SQLAlchemy Connection ({conn.dialect.name}+{conn.dialect.driver})"
    _check_sqlalchemy_dialect(conn.dialect, what, dialect, where)
    if not conn.in_transaction():
        conn.begin()
    return _driver_of(conn.connection.driver_connection, what, dialect, where)


def _sqlalchemy_session(session: Any, dialect: str, where: object) -> Any:
    """The connection of the Session's current transaction (begun if none is)."""
    bind = session.get_bind()
    what = f"an SQLAlchemy Session ({bind.dialect.name}+{bind.dialect.driver})"
    _check_sqlalchemy_dialect(bind.dialect, what, dialect, where)
    return _driver_of(session.connection().connection.driver_connection, what, dialect, where)


def _sqlalchemy_engine(engine: Any, dialect: str, where: object) -> Any:
    raise ConfigError(
        f"conn= got an SQLAlchemy Engine ({engine!r}), which is no transaction: pass the Connection "
        "of `with engine.begin() as conn:` or a Session, whose transaction the job joins"
    )


def _check_sqlalchemy_dialect(sa_dialect: Any, what: str, dialect: str, where: object) -> None:
    found = _FRAMEWORK_DIALECTS.get(sa_dialect.name)
    if found is None:
        raise ConfigError(f"conn= got {what} to a {sa_dialect.name} database: batchq has no backend for it")
    if found != dialect:
        raise _other_dialect(what, found, dialect, where)
