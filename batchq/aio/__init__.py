"""batchq for asyncio apps (FastAPI, Starlette, aiohttp...): ``await q.enqueue(...)``.

``AsyncQueue`` and ``AsyncMessageQueue`` run the sync ``Queue`` and ``MessageQueue`` code, the
one copy of batchq's checks and statements, in a greenlet whose driver calls are awaited on the
event loop (batchq.aio.bridge). With ``conn=`` (an asyncio driver's connection, or SQLAlchemy's
``AsyncSession`` / ``AsyncConnection``) the statements run in the caller's transaction, as the
sync API's conn= does; without it, on a connection of a small pool the object owns.
"""

from __future__ import annotations

from .queue import AsyncMessageQueue, AsyncQueue

__all__ = ["AsyncMessageQueue", "AsyncQueue"]
