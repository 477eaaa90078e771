"""docs/testing.md's example, run as a user runs it (issue 24 part 4): its code blocks are written
into a folder of their own and pytest runs there in a new process, loading batchq's plugin through
its pytest11 entry point, on every backend. And the plugin, loaded into every pytest run where
batchq is installed (this suite's too), adds nothing a test does not ask for."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.docblocks import named
from tests.support.processes import ROOT

DOC = ROOT / "docs" / "testing.md"
_BLOCK = re.compile(r"^```python\n# (?P<path>[\w/.]+\.py)\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


def doc_files() -> dict[str, str]:
    """{path: code} of the doc's python blocks that start with a file name."""
    files = {m["path"]: f"# {m['path']}\n{m['code']}" for m in _BLOCK.finditer(DOC.read_text("utf-8"))}
    assert set(files) == {"shop/jobs.py", "shop/orders.py", "conftest.py", "tests/test_orders.py"}, files
    # The blocks marked `<!-- run: testing-shop -->` (tests/support/docblocks.py): these.
    assert sorted(b.code for b in named("testing-shop", "docs/testing.md")) == sorted(files.values())
    return files


def write_example(folder: Path) -> None:
    for path, code in doc_files().items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code, "utf-8")
    (folder / "shop" / "__init__.py").write_text("", "utf-8")


def run_pytest(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("BATCHQ_", "PYTEST_"))}
    environment.update(PYTHONPATH=str(folder), **env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(folder), *args],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_docs_example_passes_as_written(backend_name: str, db_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "app"
    write_example(folder)
    # SQLite: the plugin's default, a file per test; a server: the test database, by the env var.
    env = {} if backend_name == "sqlite" else {"BATCHQ_TEST_URL": db_url}
    result = run_pytest(folder, **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout, result.stdout


def test_the_docs_example_fails_when_the_app_does_not_enqueue(tmp_path: Path) -> None:
    """The assertions are real: with the enqueue taken out, the tests fail, and say what they
    looked for and what the table holds."""
    folder = tmp_path / "app"
    write_example(folder)
    orders = folder / "shop" / "orders.py"
    orders.write_text(orders.read_text().replace("queue.enqueue(", "(lambda *a, **k: None)("), "utf-8")
    result = run_pytest(folder)
    assert result.returncode == 1, result.stdout
    assert "4 failed" in result.stdout, result.stdout
    assert (
        "expected 1 job of task 'shop.jobs:send_receipt' with payload {'order': 42, 'email': "
        "'ann@example.com'} in queue 'mail'; found 0. No job is enqueued." in result.stdout
    )


def test_the_plugin_is_loaded_by_its_entry_point_with_its_option(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, "--help")
    assert result.returncode == 0 and "--batchq-url=URL" in result.stdout
    (tmp_path / "test_url.py").write_text(
        "def test_url(batchq_url, batchq_queue):\n"
        "    import os\n"
        "    assert batchq_url == os.environ['BATCHQ_URL'] == 'sqlite:///%s'\n"
        "    assert batchq_queue.stats() == []\n" % (tmp_path / "given.db")
    )
    given = run_pytest(tmp_path, f"--batchq-url=sqlite:///{tmp_path / 'given.db'}", "test_url.py")
    assert given.returncode == 0, given.stdout + given.stderr
    assert (tmp_path / "given.db").exists()
    left_out = run_pytest(tmp_path, "-p", "no:batchq", "test_url.py")
    assert left_out.returncode == 1 and "fixture 'batchq_url' not found" in left_out.stdout


def test_the_plugin_adds_nothing_a_test_does_not_ask_for(request: pytest.FixtureRequest) -> None:
    """It is loaded into this suite too: no autouse fixture, no hook but pytest_addoption, and
    none of its fixtures is used unless named."""
    from batchq.testing import pytest_plugin

    plugin = request.config.pluginmanager.get_plugin("batchq")
    assert plugin is pytest_plugin
    hooks = [name for name in vars(pytest_plugin) if name.startswith("pytest_")]
    assert hooks == ["pytest_addoption"]
    fixtures = {name for name in vars(pytest_plugin) if name.startswith("batchq_")}
    assert fixtures == {"batchq_url", "batchq_queue", "batchq_drain", "batchq_inline"}
    # An autouse fixture would be among every test's fixtures, this one's too.
    assert not fixtures & set(request.fixturenames), request.fixturenames
