"""The Django project of tests/apps (djproj_settings, djproj_app) run as its user would: Django
code in `python -m django shell -c` processes, workers as `python -m django batchq run`.

Django's settings are configured once per process, so every scenario is a process of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.processes import APPS_DIR, ROOT

RESULT_MARK = "RESULT "


@dataclass
class DjangoProject:
    url: str  # the batchq test database (DJPROJ_URL)
    tmp_path: Path
    queue_url_mode: bool = False  # Django's own database an SQLite file, OPTIONS URL = url
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def ledger(self) -> Path:
        return self.tmp_path / "ledger"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BATCHQ_URL", "BATCHQ_TASK_MODULES"))}
        env.update(
            DJANGO_SETTINGS_MODULE="djproj_settings",
            DJPROJ_URL=self.url,
            DJPROJ_LEDGER=str(self.ledger),
            DJPROJ_SQLITE=str(self.tmp_path / "django.db"),
            PYTHONPATH=os.pathsep.join([str(APPS_DIR), str(ROOT)]),
        )
        if self.queue_url_mode:
            env["DJPROJ_QUEUE_URL"] = "1"
        env.update(self.extra_env)
        env.update(extra)
        return env

    def shell(self, code: str, **env: str) -> Any:
        """Run ``code`` with the project set up; returns the JSON of its variable ``out``."""
        script = f"{code}\nimport json as _json\nprint({RESULT_MARK!r} + _json.dumps(out, default=str))\n"
        done = subprocess.run(
            [sys.executable, "-m", "django", "shell", "-c", script],
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
        assert done.returncode == 0 and lines, (done.stdout, done.stderr)
        return json.loads(lines[-1][len(RESULT_MARK) :])

    def batchq(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """`manage.py batchq ARGS` (as `python -m django batchq ARGS`)."""
        return subprocess.run(
            [sys.executable, "-m", "django", "batchq", *args],
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=120,
        )

    def ran(self) -> list[str]:
        """What the tasks recorded, in the order they ran."""
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []
