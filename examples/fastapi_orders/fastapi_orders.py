"""A FastAPI app whose request saves an order and enqueues its confirmation in one transaction,
with batchq's async API (batchq.aio) on the request's SQLAlchemy AsyncSession.

The order and the job are both in the app's database (run `batchq init-db` on it): the job is
written through the session (conn=), so it exists exactly when the order does. README.md says
how to run it and its worker. (No `from __future__ import annotations`: FastAPI reads the
dependencies of the views' annotations, which name create_app's local `session`.)
"""

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from batchq.aio import AsyncQueue

metadata = sa.MetaData()
orders = sa.Table(
    "example_order",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("item", sa.String(100), nullable=False),
)
confirmations = sa.Table(  # one row each time the job runs
    "example_confirmation",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("order_id", sa.Integer, nullable=False),
)


async def confirm(payload: dict[str, Any]) -> str:
    """The job, run by `batchq run` (an async task runs on an event loop of its own): mail the
    confirmation of an order (here, record it)."""
    engine = create_async_engine(os.environ["APP_DATABASE"])
    try:
        async with engine.begin() as conn:
            await conn.execute(confirmations.insert().values(order_id=payload["order"]))
    finally:
        await engine.dispose()  # its connections belong to this job's event loop
    return f"order {payload['order']} confirmed"  # kept for GET /jobs/<id> (keep_result=True)


class NewOrder(BaseModel):
    item: str


def create_app(batchq_url: str | None = None, database: str | None = None) -> FastAPI:
    """batchq_url: the queue's database (else $BATCHQ_URL); database: the same database as an
    async SQLAlchemy URL (else $APP_DATABASE): postgresql+psycopg://, mysql+asyncmy://,
    sqlite+aiosqlite:///."""
    engine = create_async_engine(database or os.environ["APP_DATABASE"])
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    queue = AsyncQueue(batchq_url)  # a small pool of its own for calls without conn=

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        yield
        await queue.close()
        await engine.dispose()

    async def session() -> AsyncIterator[AsyncSession]:
        async with sessions() as s:
            yield s  # closed after the request: whatever was not committed rolls back

    app = FastAPI(lifespan=lifespan)

    @app.post("/orders", status_code=201)
    async def create_order(order: NewOrder, s: Annotated[AsyncSession, Depends(session)]) -> dict[str, int]:
        saved = await s.execute(orders.insert().values(item=order.item))
        order_id = saved.inserted_primary_key[0]
        # In the session's transaction: committed with the order, rolled back with it.
        job = await queue.enqueue(confirm, {"order": order_id}, queue="mail", conn=s, keep_result=True)
        if not order.item.strip():  # a refusal after both writes: neither stays
            raise HTTPException(400, "an order needs an item")
        await s.commit()
        return {"id": order_id, "job": job}

    @app.get("/jobs/{job_id}")
    async def job_result(job_id: int) -> dict[str, Any]:
        found = await queue.result(job_id)
        return {"status": found.status, "value": found.value}

    return app
