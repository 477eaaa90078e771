"""Worker processes: batchq byte-compiled as an install would be, K commands started at once and timed."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from settings import PYTHON, REPO_DIR


def compile_batchq() -> None:
    """Byte-compile batchq as `pip install` does; an editable checkout is otherwise compiled on
    every `batchq run` start wherever PYTHONDONTWRITEBYTECODE is set (as on the bench machine)."""
    import batchq.sql

    for package in (sys.modules["batchq"], batchq.sql):
        subprocess.run([PYTHON, "-m", "compileall", "-q", *package.__path__], check=True)


def run_procs(cmds: Sequence[Sequence[str]], env: dict[str, str], timeout: float = 600) -> float:
    """Start every command at once, wait for all; wall seconds from first spawn to last exit."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen(list(c), env=env, cwd=REPO_DIR) for c in cmds]
    deadline = t0 + timeout
    for p in procs:
        try:
            rc = p.wait(timeout=max(1.0, deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        if rc != 0:
            raise RuntimeError(f"{_shown(p.args)} exited {rc}")
    return time.perf_counter() - t0


def _shown(args: Any) -> str:
    return " ".join(str(a) for a in args)
