"""examples/django_shop as its user runs it: `manage.py migrate`, `manage.py runserver`, HTTP
requests, and `manage.py batchq run` draining what they enqueued, on every backend (MariaDB
through mysqlclient, Django's MySQL driver)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

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

PROJECT = EXAMPLES / "django_shop"
DECLINED = "4000-0000-0000-0002"


def manage(*args: str) -> list[str]:
    return [sys.executable, "manage.py", *args]


def test_checkout_commits_its_jobs_a_declined_one_leaves_none_and_the_result_is_read_back(
    backend_name: str, tmp_path: Path
) -> None:
    url = example_database(backend_name, tmp_path, "django_shop")
    env = example_env(SHOP_DATABASE_URL=url)
    migrated = subprocess.run(manage("migrate"), cwd=PROJECT, env=env, capture_output=True, text=True)
    assert migrated.returncode == 0, migrated.stderr
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server_log, worker_log = tmp_path / "server.log", tmp_path / "worker.log"
    serve = manage("runserver", "--noreload", f"127.0.0.1:{port}")
    with running(serve, PROJECT, env, server_log) as server, httpx.Client(base_url=base) as http:
        wait_until_serving(base, server, server_log)

        declined = http.post("/orders/", json={"item": "pen", "card": DECLINED})
        assert declined.status_code == 402, declined.text
        assert job_count(url) == 0  # the order and both jobs rolled back together
        assert http.get("/orders/1/").status_code == 404

        created = http.post("/orders/", json={"item": "book"})
        assert created.status_code == 201, created.text
        order, task_id = created.json()["order"], created.json()["task"]
        assert job_count(url) == 2  # committed with the order: the Django Task and the batchq job
        assert http.get(f"/tasks/{task_id}/").json() == {"status": "READY", "return_value": None}

        worker_cmd = manage(
            "batchq", "run", "--task-modules", "shop.jobs", "--wait", "120", "--poll-interval", "0.05"
        )
        with running(worker_cmd, PROJECT, env, worker_log) as worker:

            def events() -> list[str]:
                return sorted(http.get(f"/orders/{order}/").json()["events"])

            wait_for(lambda: len(events()) == 2, timeout=60)
            result = http.get(f"/tasks/{task_id}/").json()
            stop(worker, worker_log)

        assert result == {"status": "SUCCESSFUL", "return_value": f"order {order} (book) confirmed"}
        assert events() == ["confirmation sent", "stock reserved"]  # each job ran once
        assert job_count(url) == 0
        assert "Traceback" not in worker_log.read_text(), worker_log.read_text()
