"""examples/fastapi_orders (FastAPI, an SQLAlchemy AsyncSession, batchq.aio) served by uvicorn and
driven over HTTP (httpx), with a `batchq run` process draining what its requests enqueued, on every
backend: postgresql+psycopg, mysql+asyncmy, sqlite+aiosqlite."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from batchq import Queue
from batchq.core.config import parse_url
from tests.contract.test_app_frameworks import engine_url
from tests.support.examples import (
    EXAMPLES,
    example_database,
    example_env,
    free_port,
    job_count,
    running,
    stop,
    wait_until_serving,
)
from tests.support.processes import wait_for

pytestmark = pytest.mark.slow

APP_DIR = EXAMPLES / "fastapi_orders"
ASYNC_DRIVERS = {"sqlite": "aiosqlite", "postgresql": "psycopg", "mysql": "asyncmy"}


def async_engine_url(url: str) -> str:
    """The SQLAlchemy URL of ``url`` with the dialect's asyncio driver."""
    dialect = parse_url(url).dialect
    rest = engine_url(url).split("://", 1)[1]
    return f"{dialect}+{ASYNC_DRIVERS[dialect]}://{rest}"


def test_a_committed_order_is_confirmed_once_a_refused_one_leaves_no_job_and_the_result_is_read(
    backend_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(APP_DIR))  # as the worker imports it: `fastapi_orders`
    import fastapi_orders

    url = example_database(backend_name, tmp_path, "fastapi_orders")
    setup = Queue(url)
    setup.init_db()  # `batchq init-db`
    setup.close()
    database = async_engine_url(url)
    sync_engine = sa.create_engine(engine_url(url))

    def confirmed() -> list[int]:
        with sync_engine.connect() as conn:
            return [row.order_id for row in conn.execute(sa.select(fastapi_orders.confirmations))]

    env = example_env(
        BATCHQ_URL=url, BATCHQ_TASK_MODULES="fastapi_orders", APP_DATABASE=database, PYTHONPATH=str(APP_DIR)
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server_log, worker_log = tmp_path / "server.log", tmp_path / "worker.log"
    serve = [sys.executable, "-m", "uvicorn", "--factory", "fastapi_orders:create_app", "--port", str(port)]
    with running(serve, APP_DIR, env, server_log) as server, httpx.Client(base_url=base) as http:
        wait_until_serving(base, server, server_log)
        refused = http.post("/orders", json={"item": " "})
        assert refused.status_code == 400, refused.text
        assert job_count(url) == 0  # rolled back with the order
        created = http.post("/orders", json={"item": "book"})
        assert created.status_code == 201, created.text
        order, job = created.json()["id"], created.json()["job"]
        with sync_engine.connect() as conn:
            assert [row.item for row in conn.execute(sa.select(fastapi_orders.orders))] == ["book"]
        assert http.get(f"/jobs/{job}").json() == {"status": "waiting", "value": None}

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
        with running(worker_cmd, APP_DIR, env, worker_log) as worker:
            wait_for(lambda: http.get(f"/jobs/{job}").json()["status"] == "succeeded", timeout=60)
            stop(worker, worker_log)

        assert http.get(f"/jobs/{job}").json() == {"status": "succeeded", "value": f"order {order} confirmed"}
    assert confirmed() == [order]  # ran once
    assert job_count(url) == 0
    sync_engine.dispose()
