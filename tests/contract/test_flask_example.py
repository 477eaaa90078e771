"""examples/flask_orders.py, a Flask app with a scoped SQLAlchemy session, on every backend: a
request that commits leaves its order and its job; one that fails after both writes, neither."""

from __future__ import annotations

import sqlalchemy as sa

from batchq import Queue
from examples import flask_orders
from tests.contract.test_app_frameworks import engine_url


def test_a_request_commits_its_order_and_job_together_or_neither(queue: Queue, db_url: str) -> None:
    database = engine_url(db_url)
    app = flask_orders.create_app(db_url, database)
    engine = sa.create_engine(database)
    with engine.begin() as conn:
        conn.execute(flask_orders.orders.delete())
    client = app.test_client()
    app.testing = False  # a failing view answers 500, as in production, instead of raising

    created = client.post("/orders", json={"item": "book"})
    failed = client.post("/orders", json={"item": ""})

    assert created.status_code == 201 and failed.status_code == 500
    with engine.connect() as conn:
        saved = [row.item for row in conn.execute(sa.select(flask_orders.orders.c.item))]
    engine.dispose()
    assert saved == ["book"]
    assert [(s.queue, s.ready) for s in queue.stats()] == [("mail", 1)]
