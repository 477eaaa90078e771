"""Slot files of SQLite databases: the same URL in two folders is two databases (issue 9, item 2)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import batchq_cmd, batchq_env, wait_for

# -- item 2: per-host slot files ------------------------------------------------------------


def slot_files(runtime: Path) -> list[Path]:
    return sorted(runtime.glob("batchq/*/slot-*.lock"))


@pytest.mark.backends("sqlite")
def test_same_sqlite_url_in_two_folders_does_not_share_slots(backend_name: str, tmp_path: Path) -> None:
    """Two apps with sqlite:///jobs.db in different directories are two databases: two slot sets."""
    apps = [tmp_path / "app_a", tmp_path / "app_b"]
    tmp_path.chmod(0o700)  # a runtime folder is the user's alone
    env = batchq_env("sqlite:///jobs.db", XDG_RUNTIME_DIR=str(tmp_path))
    for app in apps:
        app.mkdir()
        subprocess.run(batchq_cmd("init-db"), cwd=app, env=env, check=True, timeout=60)
    marker = tmp_path / "b_ran"
    subprocess.run(
        batchq_cmd("enqueue", "jobs:touch", json.dumps(str(marker))), cwd=apps[1], env=env, check=True
    )
    holder = subprocess.Popen(
        batchq_cmd("run", "--max-procs-per-host", "1", "--wait", "60"),
        cwd=apps[0],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: slot_files(tmp_path))
        other = subprocess.run(
            batchq_cmd("run", "--max-procs-per-host", "1"),
            cwd=apps[1],
            env=env,
            capture_output=True,
            text=True,
        )
        assert other.returncode == 0, other.stderr
        assert marker.exists(), "app B's worker took app A's slot for its own"
    finally:
        holder.terminate()
        holder.wait(timeout=30)
