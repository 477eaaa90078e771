"""Every unmarked python, sh and console block of the README and docs/ runs as written (issue 26),
one page at a time, in document order, in an empty folder of its own (tests/support/doc_runner.py):

- the reader's state after the tutorial: `batchq` and `python` of this environment on PATH,
  BATCHQ_URL a fresh SQLite file there, its tables created (`batchq init-db`), and
  BATCHQ_TASK_MODULES=myapp.jobs, the module the pages call "your tasks"
  (tests/support/docs_app/myapp/jobs.py stands for it);
- the pages' example servers are the test servers: a URL on the host `db.internal` is rewritten
  to a fresh database of the MySQL or PostgreSQL test server (tests/support/db.py), so a
  server-specific block runs there;
- blocks marked `<!-- not run: REASON -->` or `<!-- run: NAME -->` (a named test runs those)
  are left out; tests/unit/test_doc_blocks.py checks that every block is run, checked or marked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.db import create_database, fresh_database_url, selected_backends
from tests.support.docblocks import RUN_LANGS, Block, all_blocks
from tests.support.processes import ROOT

RUNNER = ROOT / "tests" / "support" / "doc_runner.py"
DOCS_APP = ROOT / "tests" / "support" / "docs_app"
_FILE = re.compile(r"^# (?P<path>[\w/-]+\.(py|toml|yaml|yml|json))\b")
# A URL of the pages' example server: mysql://user:pw@db.internal:3306/app, postgresql://app@db.internal/app
_SERVER_URL = re.compile(r"(?P<dialect>mysql|postgresql)://[^\s'\"@/]*@db\.internal(:\d+)?/\w+")


def auto_blocks(blocks: list[Block]) -> dict[str, list[Block]]:
    """{page: its blocks this test runs}: unmarked blocks of a runnable language, and the files
    (a block whose first line names one) the page defines, the files first."""
    found: dict[str, list[Block]] = {}
    for b in blocks:
        if b.mark is None and (b.lang in RUN_LANGS or _FILE.match(b.code)):
            found.setdefault(b.page, []).append(b)
    return {page: sorted(found[page], key=lambda b: not _FILE.match(b.code)) for page in found}


def step(b: Block, servers: dict[str, str]) -> dict[str, str]:
    code = _SERVER_URL.sub(lambda m: servers[m["dialect"]], b.code)
    kind = {"python": "python", "py": "python", "console": "console"}.get(b.lang, "sh")
    if named := _FILE.match(code):
        return {"where": b.where, "kind": "file", "path": named["path"], "code": code}
    return {"where": b.where, "kind": kind, "code": code}


def run_page(blocks: list[Block], folder: Path, servers: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The blocks in order in ``folder``, after `batchq init-db` on a fresh SQLite file there."""
    folder.mkdir(parents=True, exist_ok=True)
    steps = folder.parent / f"{folder.name}-steps.json"
    steps.write_text(json.dumps([step(b, servers) for b in blocks]), "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATCHQ_", "PYTHON"))}
    env.update(
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        HOME=str(folder),
        BATCHQ_URL=f"sqlite:///{folder / 'batchq.db'}",
        BATCHQ_TASK_MODULES="myapp.jobs",
        PYTHONPATH=os.pathsep.join([str(folder), str(DOCS_APP)]),
    )
    init = subprocess.run(["batchq", "init-db"], cwd=folder, env=env, capture_output=True, text=True)
    assert init.returncode == 0, init.stderr
    return subprocess.run(
        [sys.executable, str(RUNNER), str(steps)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def servers_for(blocks: list[Block], tmp_path: Path) -> dict[str, str]:
    """A fresh test database for each server the blocks name (by its example URL); a page that
    needs a server BATCHQ_TEST_BACKENDS leaves out is not run (as the servers' own tests are not)."""
    servers = {}
    for dialect in sorted({m["dialect"] for b in blocks for m in _SERVER_URL.finditer(b.code)}):
        if dialect not in selected_backends():
            pytest.skip(f"{blocks[0].page} runs on {dialect}, which BATCHQ_TEST_BACKENDS leaves out")
        servers[dialect] = fresh_database_url(dialect, tmp_path, "docs")
        create_database(servers[dialect])
    return servers


PAGES = auto_blocks(all_blocks())


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_page_s_blocks_run_as_written(page: str, tmp_path: Path) -> None:
    blocks = PAGES[page]
    done = run_page(blocks, tmp_path / "reader", servers_for(blocks, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_block_that_fails_fails_its_page(tmp_path: Path) -> None:
    """The runner's must-fail case: an exception, a failing command, a file that is not Python."""
    failing = [("python", "1 / 0\n"), ("sh", "batchq no-such-command\n"), ("python", "# a.py\ndef(\n")]
    for lang, code in failing:
        bad = Block("docs/x.md", 3, lang, code, None, "")
        ok = Block("docs/x.md", 1, "python", "print('fine')\n", None, "")
        done = run_page([ok, bad], tmp_path / lang / str(len(code)), {})
        assert done.returncode == 1 and "docs/x.md:3" in done.stderr, done.stderr
        assert done.stdout.startswith("fine\n")


def test_the_runner_keeps_one_namespace_a_page_and_writes_its_files(tmp_path: Path) -> None:
    blocks = [
        Block("p.md", 1, "python", "# shop/jobs.py\ndef hi(p):\n    print('hi', p['n'])\n", None, ""),
        Block("p.md", 5, "python", "import batchq\nq = batchq.Queue(task_modules='shop.jobs')\n", None, ""),
        Block("p.md", 9, "python", "q.enqueue('shop.jobs:hi', {'n': 1})\n", None, ""),
        Block("p.md", 12, "console", "$ BATCHQ_TASK_MODULES=shop.jobs batchq run\nhi 1\n", None, ""),
    ]
    done = run_page(blocks, tmp_path / "reader", {})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi 1\n"
    assert auto_blocks([*blocks, Block("p.md", 20, "toml", "# s.toml\n", None, "")])["p.md"][:2] == [
        Block("p.md", 1, "python", "# shop/jobs.py\ndef hi(p):\n    print('hi', p['n'])\n", None, ""),
        Block("p.md", 20, "toml", "# s.toml\n", None, ""),
    ]
