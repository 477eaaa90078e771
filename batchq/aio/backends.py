"""batchq's backends on an asyncio driver's connection of their own (batchq.aio without conn=).

Each is its dialect's backend, unchanged but for the driver call that opens the connection (an
asyncio driver's, bridged: batchq.aio.bridge) and the pause between two tries of a transaction
(the event loop's sleep): its session settings, transactions, retries and error translation
are the sync backend's own, run in the greenlet of a batchq.aio call.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..backends import Backend
from ..backends.mysql import MySQLBackend
from ..backends.postgresql import PostgreSQLBackend
from ..backends.sqlite import SQLiteBackend
from ..core.config import DatabaseURL
from ..errors import ConfigError
from .bridge import AiomysqlBridge, AiosqliteBridge, AsyncmyBridge, PsycopgBridge, await_

MYSQL_DRIVERS = ("asyncmy", "aiomysql")


class _OnTheLoop:
    def sleep(self, seconds: float) -> None:
        await_(asyncio.sleep(seconds))


class AsyncPostgreSQLBackend(_OnTheLoop, PostgreSQLBackend):
    def _open(self, **arguments: Any) -> Any:
        import psycopg

        return PsycopgBridge(await_(psycopg.AsyncConnection.connect(**arguments)))


class AsyncSQLiteBackend(_OnTheLoop, SQLiteBackend):
    def _open(self, path: str, **arguments: Any) -> Any:
        import aiosqlite

        return AiosqliteBridge(await_(aiosqlite.connect(path, **arguments)))


def _mysql_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """PyMySQL's connect arguments as the asyncio drivers take them (no TLS: no ssl=)."""
    arguments = dict(arguments)
    arguments.pop("ssl_disabled", None)
    return arguments


class AsyncmyBackend(_OnTheLoop, MySQLBackend):
    def _open(self, **arguments: Any) -> Any:
        import asyncmy

        bridge = AsyncmyBridge(None)
        return AsyncmyBridge(bridge.wait(asyncmy.connect(**_mysql_arguments(arguments))))


class AiomysqlBackend(_OnTheLoop, MySQLBackend):
    def _open(self, **arguments: Any) -> Any:
        import aiomysql  # type: ignore[import-untyped]

        arguments = _mysql_arguments(arguments)
        arguments["db"] = arguments.pop("database")
        return AiomysqlBridge(await_(aiomysql.connect(**arguments)))


def async_backend(url: DatabaseURL, mysql_driver: str = "asyncmy") -> Backend:
    """A backend of ``url``'s dialect whose own connection is an asyncio driver's."""
    if url.dialect == "sqlite":
        return AsyncSQLiteBackend(url)
    if url.dialect == "postgresql":
        return AsyncPostgreSQLBackend(url)
    if mysql_driver == "asyncmy":
        return AsyncmyBackend(url)
    if mysql_driver == "aiomysql":
        return AiomysqlBackend(url)
    raise ConfigError(
        f"unknown MySQL driver {mysql_driver!r} for batchq.aio: use one of {', '.join(MYSQL_DRIVERS)}"
    )
