"""What an asyncio app holds, down to its driver's connection (for batchq.aio's conn=)."""

from __future__ import annotations

from typing import Any

from .bridge import BridgedConnection, bridge


async def app_connection(conn: Any) -> BridgedConnection:
    """The bridged driver connection under ``conn``: an asyncio driver's connection itself, or
    the one under a SQLAlchemy ``AsyncSession`` / ``AsyncConnection``, in its transaction.

    A session or connection not yet in a transaction begins one first, as SQLAlchemy does
    before any statement (autobegin): its commit() then commits the job, and its rollback()
    takes it back. batchq never commits or rolls back what it was given."""
    if type(conn).__module__.startswith("sqlalchemy."):
        from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

        if isinstance(conn, AsyncSession):
            conn = await conn.connection()  # the session's transaction, begun if need be
        if isinstance(conn, AsyncConnection):
            if not conn.in_transaction():
                await conn.begin()
            raw = await conn.get_raw_connection()
            return bridge(raw.driver_connection)
    return bridge(conn)
