"""A Flask app whose request saves an order and enqueues its confirmation in one transaction.

The order and the job are both in the app's database (run `batchq init-db` on it): the job is
written through the request's SQLAlchemy session (conn=), so it exists exactly when the order
does. README.md says how to run it and its worker.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import sqlalchemy as sa
from flask import Flask, request
from sqlalchemy.orm import scoped_session, sessionmaker

from batchq import Queue

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


@functools.cache
def engine(url: str) -> sa.Engine:
    return sa.create_engine(url)


def confirm(payload: dict[str, Any]) -> str:
    """The job, run by `batchq run`: mail the confirmation of an order (here, record it)."""
    with engine(os.environ["APP_DATABASE"]).begin() as conn:
        conn.execute(confirmations.insert().values(order_id=payload["order"]))
    return f"order {payload['order']} confirmed"  # kept for GET /jobs/<id> (keep_result=True)


def create_app(batchq_url: str | None = None, database: str | None = None) -> Flask:
    """batchq_url: the queue's database (else $BATCHQ_URL); database: the same database as an
    SQLAlchemy URL (else $APP_DATABASE), e.g. postgresql+psycopg://app@db/app."""
    app = Flask(__name__)
    db = engine(database or os.environ["APP_DATABASE"])
    metadata.create_all(db)
    session = scoped_session(sessionmaker(db))  # one Session per request (thread)
    queue = Queue(batchq_url)

    @app.post("/orders")
    def create_order() -> tuple[dict[str, Any], int]:
        item = request.get_json()["item"]
        order_id = session.execute(orders.insert().values(item=item)).inserted_primary_key[0]
        # In the session's transaction: committed with the order, rolled back with it.
        job = queue.enqueue(confirm, {"order": order_id}, queue="mail", conn=session, keep_result=True)
        if item == "":  # a failure after both writes: the request rolls back, neither stays
            raise ValueError("an order needs an item")
        session.commit()
        return {"id": order_id, "job": job}, 201

    @app.get("/jobs/<int:job_id>")
    def job_result(job_id: int) -> dict[str, Any]:
        found = queue.result(job_id)  # "waiting", "running", "succeeded", "failed", ...
        return {"status": found.status, "value": found.value}

    @app.teardown_appcontext
    def end_session(exc: BaseException | None) -> None:
        session.remove()  # rolls back whatever the request did not commit

    return app
