"""A Flask app whose request saves an order and enqueues its confirmation in one transaction.

    BATCHQ_URL=postgresql://app@db/app APP_DATABASE=postgresql+psycopg://app@db/app \
        flask --app examples/flask_orders.py run

The order and the job are both in the app's database (run `batchq init-db` on it): the job
is written through the request's SQLAlchemy session (conn=), so it exists exactly when the
order does. A worker then runs `PYTHONPATH=examples BATCHQ_TASK_MODULES=flask_orders batchq run`.
"""

from __future__ import annotations

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


def confirm(payload: dict[str, Any]) -> None:
    """The job: mail the confirmation of an order (here, print it)."""
    print(f"order {payload['order']} confirmed", flush=True)


def create_app(batchq_url: str | None = None, database: str | None = None) -> Flask:
    app = Flask(__name__)
    engine = sa.create_engine(database or os.environ["APP_DATABASE"])
    metadata.create_all(engine)
    session = scoped_session(sessionmaker(engine))  # one Session per request (thread)
    queue = Queue(batchq_url, task_modules=[__name__])

    @app.post("/orders")
    def create_order() -> tuple[dict[str, Any], int]:
        item = request.get_json()["item"]
        order_id = session.execute(orders.insert().values(item=item)).inserted_primary_key[0]
        queue.enqueue(confirm, {"order": order_id}, queue="mail", conn=session)
        if item == "":  # a failure after both writes: the request rolls back, neither stays
            raise ValueError("an order needs an item")
        session.commit()
        return {"id": order_id}, 201

    @app.teardown_appcontext
    def end_session(exc: BaseException | None) -> None:
        session.remove()  # rolls back whatever the request did not commit

    return app
