"""The asyncio connections an app holds, opened on a test database (batchq.aio's conn=)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from batchq.core.config import parse_url

# Per backend: the kinds of connection an asyncio app hands to conn=.
KINDS = {
    "postgresql": ["psycopg", "sa-session:postgresql+psycopg", "sa-connection:postgresql+psycopg"],
    "mysql": [
        "aiomysql",
        "asyncmy",
        "sa-session:mysql+aiomysql",
        "sa-connection:mysql+aiomysql",
        "sa-session:mysql+asyncmy",
        "sa-connection:mysql+asyncmy",
    ],
    "sqlite": ["aiosqlite", "sa-session:sqlite+aiosqlite", "sa-connection:sqlite+aiosqlite"],
}


@dataclass
class AppConn:
    """What the app holds (``handle``, passed as conn=), and its transaction's end."""

    handle: Any
    kind: str

    async def commit(self) -> None:
        await self.handle.commit()

    async def rollback(self) -> None:
        await self.handle.rollback()


async def open_driver(kind: str, db_url: str) -> Any:
    """A raw asyncio driver connection, autocommit off (a transaction begins with the first DML)."""
    url = parse_url(db_url)
    if kind == "psycopg":
        import psycopg

        return await psycopg.AsyncConnection.connect(
            host=url.host, port=url.port or 5432, user=url.user, dbname=url.database
        )
    if kind == "aiomysql":
        import aiomysql

        return await aiomysql.connect(
            host=url.host, port=url.port or 3306, user=url.user or "root", db=url.database, autocommit=False
        )
    if kind == "asyncmy":
        import asyncmy

        return await asyncmy.connect(
            host=url.host, port=url.port or 3306, user=url.user or "root", database=url.database
        )
    import aiosqlite

    return await aiosqlite.connect(url.database)


def sqlalchemy_url(dialect_driver: str, db_url: str) -> str:
    url = parse_url(db_url)
    if url.dialect == "sqlite":
        return f"{dialect_driver}:///{url.database}"
    port = url.port or (5432 if url.dialect == "postgresql" else 3306)
    return f"{dialect_driver}://{url.user or 'root'}@{url.host}:{port}/{url.database}"


@asynccontextmanager
async def app_conn(kind: str, db_url: str) -> AsyncIterator[AppConn]:
    """An app's async connection of ``kind`` (see KINDS), closed at the end."""
    if not kind.startswith("sa-"):
        driver = await open_driver(kind, db_url)
        try:
            yield AppConn(driver, kind)
        finally:
            closed = driver.close()
            if closed is not None:
                await closed
            await asyncio.sleep(0.05)  # aiomysql's and asyncmy's close(): the loop ends the socket
        return
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    shape, dialect_driver = kind.split(":")
    engine = create_async_engine(sqlalchemy_url(dialect_driver, db_url))
    try:
        if shape == "sa-session":
            async with AsyncSession(engine) as session:
                yield AppConn(session, kind)
        else:
            async with engine.connect() as conn:
                yield AppConn(conn, kind)
    finally:
        await engine.dispose()
