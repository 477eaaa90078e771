"""batchq's pytest plugin: fixtures for testing an application that enqueues (docs/testing.md).

Registered as a pytest11 entry point, so pytest loads it wherever batchq is installed: it only
adds an option and fixtures that a test must ask for by name (nothing autouse, no hooks), and
imports batchq's worker only when a fixture is used.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from batchq import Queue
    from batchq.testing import Inline, Outcomes

URL_ENV = "BATCHQ_TEST_URL"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("batchq")
    group.addoption(
        "--batchq-url",
        metavar="URL",
        default=None,
        help=f"Database of the batchq_queue fixture (else ${URL_ENV}, else a SQLite file per test). "
        "Its batchq job rows are deleted before each test that uses it.",
    )


@pytest.fixture
def batchq_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """--batchq-url, else $BATCHQ_TEST_URL, else a fresh SQLite file in the test's tmp_path."""
    given = request.config.getoption("--batchq-url") or os.environ.get(URL_ENV)
    return given or f"sqlite:///{tmp_path / 'batchq.db'}"


@pytest.fixture
def batchq_queue(batchq_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Queue]:
    """A Queue on batchq_url with its tables made and no jobs; BATCHQ_URL points there for the
    test, so that the application's own Queue() uses it too. Its allow-list is
    BATCHQ_TASK_MODULES, as a worker's."""
    from batchq import Queue

    monkeypatch.setenv("BATCHQ_URL", batchq_url)
    queue = Queue(batchq_url)
    queue.init_db()
    if not batchq_url.startswith("sqlite:"):  # a server's test database: earlier tests' rows go
        queue.backend.stores.jobs.clear_for_tests()
    yield queue
    queue.close()


@pytest.fixture
def batchq_drain(batchq_queue: Queue) -> Callable[..., Outcomes]:
    """drain() on batchq_queue: ``batchq_drain()``, ``batchq_drain("mail", with_scheduled=True)``."""
    from batchq.testing import drain

    return functools.partial(drain, batchq_queue)


@pytest.fixture
def batchq_inline(batchq_queue: Queue) -> Iterator[Inline]:
    """Every Queue's enqueue runs its job at once for the test (inline(), errors raised); the
    fixture's value holds the outcomes (``.ran``)."""
    from batchq.testing import inline

    with inline() as block:
        yield block
