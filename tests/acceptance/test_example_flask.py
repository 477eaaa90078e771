"""examples/flask_orders (Flask, a scoped SQLAlchemy session) driven by Flask's test client, with
a `batchq run` process draining what its requests enqueued, on every backend."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from batchq import Queue
from tests.contract.test_app_frameworks import engine_url
from tests.support.examples import EXAMPLES, example_database, example_env, job_count, running, stop
from tests.support.processes import wait_for

pytestmark = pytest.mark.slow

APP_DIR = EXAMPLES / "flask_orders"


def test_a_committed_order_is_confirmed_once_a_failed_one_leaves_no_job_and_the_result_is_read(
    backend_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(APP_DIR))  # as the worker imports it: `flask_orders`
    import flask_orders

    url = example_database(backend_name, tmp_path, "flask_orders")
    database = engine_url(url)
    setup = Queue(url)
    setup.init_db()  # `batchq init-db`
    setup.close()
    app = flask_orders.create_app(url, database)
    app.testing = False  # a failing view answers 500, as in production, instead of raising
    client = app.test_client()
    engine = sa.create_engine(database)

    def confirmed() -> list[int]:
        with engine.connect() as conn:
            return [row.order_id for row in conn.execute(sa.select(flask_orders.confirmations))]

    failed = client.post("/orders", json={"item": ""})
    assert failed.status_code == 500
    assert job_count(url) == 0  # rolled back with the order
    created = client.post("/orders", json={"item": "book"})
    assert created.status_code == 201
    order, job = created.json["id"], created.json["job"]
    with engine.connect() as conn:
        assert [row.item for row in conn.execute(sa.select(flask_orders.orders))] == ["book"]
    assert client.get(f"/jobs/{job}").json == {"status": "waiting", "value": None}

    env = example_env(
        BATCHQ_URL=url, BATCHQ_TASK_MODULES="flask_orders", APP_DATABASE=database, PYTHONPATH=str(APP_DIR)
    )
    worker_cmd = [
        sys.executable,
        "-m",
        "batchq",
        "run",
        "--queue",
        "mail",
        "--wait",
        "120",
        "--poll-interval",
        "0.05",
    ]
    log = tmp_path / "worker.log"
    with running(worker_cmd, APP_DIR, env, log) as worker:
        wait_for(lambda: client.get(f"/jobs/{job}").json["status"] == "succeeded", timeout=60)
        stop(worker, log)

    assert client.get(f"/jobs/{job}").json == {"status": "succeeded", "value": f"order {order} confirmed"}
    assert confirmed() == [order]  # ran once
    assert job_count(url) == 0
    engine.dispose()
