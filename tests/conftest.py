"""Fixtures shared by every tier: one contract suite, run against every backend on real servers.

BATCHQ_TEST_BACKENDS picks the backends (default: all). A server that cannot
be reached fails the tests: it is never a skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from batchq import MessageQueue, Queue
from tests.support.db import SERVER_URLS, app_connection, prepare_database, selected_backends
from tests.support.messages import Q
from tests.support.processes import APPS_DIR, STARTED
from tests.support.tasks import ALLOWED

# scripts/test runs the suite in several processes (pytest-xdist, `--dist loadfile`), each with
# databases of its own (tests/support/db.py). A test module runs whole in one of them, so that a
# module's servers (a Galera cluster, a PgBouncer), browser or wheel build are made once.


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("backends")  # a dialect-specific test
        names = [name for name in selected_backends() if only is None or name in only.args]
        metafunc.parametrize("backend_name", names)
    if "server_name" in metafunc.fixturenames:  # tests of server faults: no SQLite equivalent
        metafunc.parametrize("server_name", [name for name in selected_backends() if name != "sqlite"])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test parametrized by backend and async connection kind (tests/contract/test_aio.py)
    runs the kinds of each backend's drivers only: the other pairs are not tests."""
    from tests.support.aio import KINDS

    def other_pair(item: pytest.Item) -> bool:
        params = getattr(getattr(item, "callspec", None), "params", {})
        return "conn_kind" in params and params["conn_kind"] not in KINDS[params["backend_name"]]

    deselected = [item for item in items if other_pair(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not other_pair(item)]


_FIGURES_PROPERTY = "batchq_figures"
_figures_reported: list[Any] = []  # the reliability figures of every test, in the main process


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Carry the figures a test recorded in its report: under pytest-xdist the test ran in a
    worker process, and only its reports reach the process that prints the summary."""
    from tests.support.harness import FIGURES

    report = yield
    if FIGURES:
        report.user_properties.append((_FIGURES_PROPERTY, [asdict(row) for row in FIGURES]))
        FIGURES.clear()
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    from tests.support.harness import Figures

    for name, rows in report.user_properties:
        if name == _FIGURES_PROPERTY:
            _figures_reported.extend(Figures(**row) for row in rows)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the reliability figures gathered by this run (and save them if asked)."""
    from tests.support.harness import figures_table

    if not _figures_reported:
        return
    table = figures_table(_figures_reported)
    terminalreporter.write_sep("=", "reliability figures")
    terminalreporter.write_line(table)
    if os.environ.get("BATCHQ_FIGURES_FILE"):
        Path(os.environ["BATCHQ_FIGURES_FILE"]).write_text(table + "\n")


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
def admin(server_url: str) -> Iterator[Any]:
    """A raw connection with its own transaction, to lock rows and tables (and kill sessions)."""
    conn = app_connection(server_url)
    yield conn
    conn.close()


@pytest.fixture
def queue(db_url: str) -> Iterator[Queue]:
    q = Queue(db_url, task_modules=["jobs"], secret=b"test-secret")
    yield q
    q.close()


@pytest.fixture
def mq(db_url: str) -> Iterator[MessageQueue]:
    """A message queue with queue "mail" created."""
    m = MessageQueue(db_url)
    m.create_queue(Q)
    yield m
    m.close()


@pytest.fixture
def app_queue(db_url: str) -> Iterator[Queue]:
    """A queue whose only allowed task module is tests/apps/hostile_app/jobs.py."""
    q = Queue(db_url, task_modules=[ALLOWED], secret=b"test-secret")
    yield q
    q.close()


@pytest.fixture(scope="session", autouse=True)
def _private_runtime_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`batchq run` keeps its slot files in the user's runtime folder, else under the home: this
    run's workers keep theirs in a folder of its own, never in the real home or runtime folder."""
    runtime = tmp_path_factory.mktemp("runtime")
    runtime.chmod(0o700)
    before = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    yield
    if before is None:
        del os.environ["XDG_RUNTIME_DIR"]
    else:
        os.environ["XDG_RUNTIME_DIR"] = before


@pytest.fixture(autouse=True)
def _no_worker_outlives_its_test() -> Iterator[None]:
    """A `batchq` process the test started with start_batchq and left running (an assertion
    failed before its wait) is killed when the test ends, so it cannot claim the next test's
    jobs. What a caller stops itself (a module's dashboards) is started with spawn_batchq."""
    first = len(STARTED)
    yield
    for proc in STARTED[first:]:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    del STARTED[first:]


@pytest.fixture(autouse=True)
def _apps_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The task modules (tests/apps) import as top-level modules, as in a worker process."""
    monkeypatch.syspath_prepend(str(APPS_DIR))
