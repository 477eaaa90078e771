"""Fixtures: one contract suite, run against every backend on real servers.

BATCHQ_TEST_BACKENDS picks the backends (default: all). A server that cannot
be reached fails the tests: it is never a skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.backends import create_backend
from batchq.config import parse_url

TESTS_DIR = Path(__file__).parent
ALL_BACKENDS = ("sqlite", "mysql", "postgresql")
SERVER_URLS = {
    "mysql": os.environ.get("BATCHQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/batchq_test"),
    "postgresql": os.environ.get(
        "BATCHQ_TEST_POSTGRESQL_URL", "postgresql://postgres@127.0.0.1:5432/batchq_test"
    ),
}
TABLES = (
    "batchq_job",
    "batchq_queue",
    "test_ledger",
    "batchq_message",
    "batchq_message_archive",
    "batchq_mq_sent",
    "batchq_mq_meta",
)


def selected_backends() -> list[str]:
    names = os.environ.get("BATCHQ_TEST_BACKENDS", ",".join(ALL_BACKENDS))
    return [name.strip() for name in names.split(",") if name.strip()]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("backends")  # a dialect-specific test
        names = [name for name in selected_backends() if only is None or name in only.args]
        metafunc.parametrize("backend_name", names)
    if "server_name" in metafunc.fixturenames:  # tests of server faults: no SQLite equivalent
        metafunc.parametrize("server_name", [name for name in selected_backends() if name != "sqlite"])


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the reliability figures gathered by this run (and save them if asked)."""
    from harness import FIGURES, figures_table

    if not FIGURES:
        return
    table = figures_table(FIGURES)
    terminalreporter.write_sep("=", "reliability figures")
    terminalreporter.write_line(table)
    if os.environ.get("BATCHQ_FIGURES_FILE"):
        Path(os.environ["BATCHQ_FIGURES_FILE"]).write_text(table + "\n")


def create_database(url: str) -> None:
    """Create the test database on the server if it is missing."""
    parsed = parse_url(url)
    if parsed.dialect == "mysql":
        import pymysql

        conn = pymysql.connect(
            host=parsed.host,
            port=parsed.port or 3306,
            user=parsed.user or "root",
            password=parsed.password,
            autocommit=True,
        )
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{parsed.database}` CHARACTER SET utf8mb4")
        conn.close()
    elif parsed.dialect == "postgresql":
        import psycopg

        with psycopg.connect(
            host=parsed.host,
            port=parsed.port or 5432,
            user=parsed.user or "postgres",
            password=parsed.password or None,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (parsed.database,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{parsed.database}"')


LEDGER_DDL = {
    "sqlite": "CREATE TABLE IF NOT EXISTS test_ledger (n INTEGER NOT NULL, pid INTEGER NOT NULL)",
    "mysql": "CREATE TABLE IF NOT EXISTS test_ledger (n BIGINT NOT NULL, pid INT NOT NULL) ENGINE=InnoDB",
    "postgresql": "CREATE TABLE IF NOT EXISTS test_ledger (n BIGINT NOT NULL, pid INT NOT NULL)",
}

_prepared: set[str] = set()


def prepare_database(backend_name: str, url: str) -> None:
    """Make the batchq tables and the ledger exist, and empty them."""
    backend = create_backend(url)
    try:
        if url not in _prepared or backend_name == "sqlite":
            create_database(url)
            backend.migrate()
            _prepared.add(url)
        with backend.errors():
            cur = backend.conn.cursor()
            cur.execute(LEDGER_DDL[backend_name])
            for table in TABLES:
                cur.execute(f"DELETE FROM {table}")
            cur.close()
    finally:
        backend.close()


@pytest.fixture
def db_url(backend_name: str, tmp_path: Path) -> str:
    """A URL whose batchq tables exist and are empty."""
    url = f"sqlite:///{tmp_path / 'batchq.db'}" if backend_name == "sqlite" else SERVER_URLS[backend_name]
    prepare_database(backend_name, url)
    return url


@pytest.fixture
def server_url(server_name: str) -> str:
    """The shared test server's URL, prepared as db_url is."""
    url = SERVER_URLS[server_name]
    prepare_database(server_name, url)
    return url


@pytest.fixture
def queue(db_url: str) -> Iterator[Queue]:
    q = Queue(db_url, task_modules=["jobs"], secret=b"test-secret")
    yield q
    q.close()


@pytest.fixture(autouse=True)
def _tests_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS_DIR))


def sql(queue: Queue, statement: str, params: Any = ()) -> list[tuple[Any, ...]]:
    """Run raw SQL on the queue's database (test inspection only)."""
    backend = queue.backend
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute(statement, params)
        rows = list(cur.fetchall()) if cur.description else []
        cur.close()
    return [tuple(row) for row in rows]


def job_rows(queue: Queue) -> list[dict[str, Any]]:
    backend = queue.backend
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute(
            "SELECT id, queue, task, status, error_count, max_errors, last_error, locked_by "
            "FROM batchq_job ORDER BY id"
        )
        rows = [dict(zip([d[0] for d in cur.description], row)) for row in cur.fetchall()]
        cur.close()
    return rows


def ledger(queue: Queue) -> list[int]:
    return sorted(row[0] for row in sql(queue, "SELECT n FROM test_ledger"))


def batchq_env(url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        BATCHQ_URL=url,
        BATCHQ_TASK_MODULES="jobs",
        BATCHQ_SECRET="test-secret",
        PYTHONPATH=os.pathsep.join([str(TESTS_DIR), env.get("PYTHONPATH", "")]),
    )
    env.update(extra)
    return env


def batchq_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "batchq", *args]


def run_batchq(url: str, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        batchq_cmd(*args), env=batchq_env(url, **env), capture_output=True, text=True, timeout=timeout
    )


def start_batchq(url: str, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        batchq_cmd(*args),
        env=batchq_env(url, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
