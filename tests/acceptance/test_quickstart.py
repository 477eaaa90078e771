"""The README's quickstart, run exactly as written (issue 24 part 5): its two files written into
an empty folder, its shell commands run by bash there (the `batchq` and `python` of this
environment, a fresh SQLite file), then its crontab line's command, as cron would run it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from batchq import Queue
from tests.support.docblocks import named
from tests.support.processes import ROOT

_QUICKSTART = re.compile(r"<!-- quickstart -->\n(?P<body>.*?)<!-- /quickstart -->", re.DOTALL)
_BLOCK = re.compile(r"^```(?P<lang>\w+)\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


def quickstart() -> list[tuple[str, str]]:
    """[(language, code)] of the README's quickstart, in order: the README's first section."""
    text = (ROOT / "README.md").read_text("utf-8")
    assert re.findall(r"^## .*", text, re.MULTILINE)[0] == "## Quickstart"
    found = _QUICKSTART.search(text)
    assert found, "README.md has no <!-- quickstart --> ... <!-- /quickstart --> markers"
    blocks = [(m["lang"], m["code"]) for m in _BLOCK.finditer(found["body"])]
    assert [lang for lang, _ in blocks] == ["python", "python", "sh", "cron"], blocks
    # The blocks marked `<!-- run: quickstart -->` (tests/support/docblocks.py): these.
    assert [(b.lang, b.code) for b in named("quickstart", "README.md")] == blocks
    return blocks


def shell(folder: Path, script: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """bash in ``folder``, with this environment's commands first on PATH and no BATCHQ_* set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATCHQ_", "PYTHON"))}
    env.update(
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]), HOME=str(folder)
    )
    env.update(extra)
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "app"
    folder.mkdir()
    blocks = quickstart()
    for _, code in blocks[:2]:
        name = code.split("\n", 1)[0].removeprefix("# ").split(":", 1)[0]  # "# jobs.py: ..."
        (folder / name).write_text(code, "utf-8")
    assert sorted(p.name for p in folder.iterdir()) == ["app.py", "jobs.py"]
    assert len("".join(code for _, code in blocks).splitlines()) <= 25  # about 20 lines

    result = shell(folder, blocks[2][1])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "mail to ann@example.com\n"
    assert "batchq: processed 1 job (1 ok, 0 errors)" in result.stderr, result.stderr
    url = f"sqlite:///{folder / 'batchq.db'}"
    queue = Queue(url)
    try:
        assert queue.stats() == []  # the job ran and was deleted
        # The crontab's line, its variables as cron sets them, /srv/app being this folder.
        assert shell(folder, "python app.py", BATCHQ_URL=url).returncode == 0
        assert [s.ready for s in queue.stats()] == [1]
        lines = blocks[3][1].replace("/srv/app", str(folder)).splitlines()
        variables = dict(line.split("=", 1) for line in lines if re.match(r"^[A-Z_]+=", line))
        [entry] = [line for line in lines if line.startswith("* * * * *")]
        command = entry.removeprefix("* * * * *").strip()
        cron = shell(tmp_path, command, **variables)
        assert (cron.returncode, cron.stdout, cron.stderr) == (0, "mail to ann@example.com\n", "")
        assert queue.stats() == []
    finally:
        queue.close()


def test_without_the_allow_list_the_worker_refuses_the_job(tmp_path: Path) -> None:
    """The quickstart's list is what lets the job run: the worker refuses it without one."""
    folder = tmp_path / "app"
    folder.mkdir()
    blocks = quickstart()
    for _, code in blocks[:2]:
        (folder / code.split("\n", 1)[0].removeprefix("# ").split(":", 1)[0]).write_text(code, "utf-8")
    script = blocks[2][1].replace("BATCHQ_TASK_MODULES=jobs ", "")
    result = shell(folder, script)
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr
    assert "TaskNotAllowed: task 'jobs:send_mail' is not allowed" in result.stderr, result.stderr
