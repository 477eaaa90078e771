"""What differs between MySQL's two Python drivers, for the statements batchq builds itself.

batchq's own connections are PyMySQL's. An application may hand over a mysqlclient (MySQLdb)
connection with conn= (Django's MySQL backend uses it). Both take ``%(name)s`` parameters and
inline every value into the statement's text; they differ in how one asks for that text, for a
tuple cursor, and for the server session's id. mysqlclient is imported only once the app has.
"""

from __future__ import annotations

import sys
from typing import Any

import pymysql.connections
import pymysql.cursors
import pymysql.err
from pymysql.constants import SERVER_STATUS


class PyMySQL:
    name = "PyMySQL"

    @staticmethod
    def tuple_cursor(conn: Any) -> Any:
        # Buffered tuples whatever cursor class the application gave its connection.
        return conn.cursor(pymysql.cursors.Cursor)

    @staticmethod
    def statement(cur: Any, sql: str, params: Any) -> bytes:
        """The statement as the driver sends it."""
        return cur.mogrify(sql, params).encode(cur.connection.encoding)  # type: ignore[no-any-return]

    @staticmethod
    def literal(conn: Any, value: Any) -> bytes:
        """One value as the driver inlines it."""
        return conn.escape(value).encode(conn.encoding)  # type: ignore[no-any-return]

    @staticmethod
    def session(conn: Any) -> Any:
        """The server session's id (a reconnected connection is a new session)."""
        return conn.server_thread_id

    @staticmethod
    def escaping(conn: Any) -> Any:
        """What the escaping of a value depends on besides the value (None: unknown)."""
        return conn.server_status & SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES


class MySQLdb:
    name = "mysqlclient"

    @staticmethod
    def tuple_cursor(conn: Any) -> Any:
        import MySQLdb.cursors

        return conn.cursor(MySQLdb.cursors.Cursor)

    @staticmethod
    def statement(cur: Any, sql: str, params: Any) -> bytes:
        """As mysqlclient's execute() builds it: its mogrify() would decode the bytes of a binary
        payload as text."""
        conn = cur.connection
        query = sql.encode(conn.encoding)
        if params is None:
            return query
        if isinstance(params, dict):
            return query % {key.encode(conn.encoding): conn.literal(value) for key, value in params.items()}
        return query % tuple(conn.literal(value) for value in params)

    @staticmethod
    def literal(conn: Any, value: Any) -> bytes:
        return conn.literal(value)  # type: ignore[no-any-return]

    @staticmethod
    def session(conn: Any) -> Any:
        return conn.thread_id()

    @staticmethod
    def escaping(conn: Any) -> Any:
        return None  # libmysqlclient asks the session itself: not known here


Driver = type[PyMySQL] | type[MySQLdb]


def driver_of(conn: Any) -> Driver:
    """The driver of a connection: batchq's own (None) and any PyMySQL one, else mysqlclient
    (batchq.backends.appconn lets no other through)."""
    if conn is None or isinstance(conn, pymysql.connections.Connection) or bridged(conn, "mysql"):
        return PyMySQL  # and aiomysql's and asyncmy's, bridged by batchq.aio: PyMySQL's protocol
    return MySQLdb


def is_driver_error(exc: Exception) -> bool:
    return isinstance(exc, pymysql.err.Error) or _is_mysqldb(exc, "Error")


def is_interface_error(exc: Exception) -> bool:
    """The connection is closed or unusable on the client's side."""
    return isinstance(exc, pymysql.err.InterfaceError) or _is_mysqldb(exc, "InterfaceError")


def _is_mysqldb(exc: Exception, name: str) -> bool:
    exceptions = sys.modules.get("MySQLdb._exceptions")
    return exceptions is not None and isinstance(exc, getattr(exceptions, name))


def bridged(conn: Any, dialect: str) -> bool:
    """Is ``conn`` an asyncio driver's connection that batchq.aio presents to this code as the
    dialect's sync driver (its statements awaited through a greenlet)?"""
    return getattr(conn, "batchq_bridged_dialect", None) == dialect
