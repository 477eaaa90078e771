"""Where the benchmarks run: paths, database URLs (refusing test databases), subprocess env.

Imports nothing of batchq at module level, so that plain_cycle.py (whose start-up is timed)
loads no batchq code.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
PYTHON = sys.executable
BIN_DIR = Path(sys.executable).parent
BATCHQ = str(BIN_DIR / "batchq")
RESULTS_DIR = BENCH_DIR / "results"

URLS = {
    "mysql": os.environ.get("BENCH_MYSQL_URL", "mysql://root@127.0.0.1:3306/batchq_bench"),
    "sqlite": os.environ.get("BENCH_SQLITE_URL", "sqlite:////tmp/batchq_bench/bench.db"),
    "postgresql": os.environ.get("BENCH_POSTGRESQL_URL", "postgresql://postgres@127.0.0.1:5432/batchq_bench"),
}
BACKENDS = tuple(URLS)
TASK = "noop_jobs:noop"
FORBIDDEN_DATABASES = {"test"}


def url_for(backend: str) -> str:
    """The backend's benchmark URL; exits if it names a test database."""
    try:
        from batchq.core.config import parse_url  # read as batchq reads it
    except ImportError:  # an older checkout a bench runs beside this one (--checkout)
        from batchq.config import parse_url  # type: ignore[no-redef]

    url = URLS[backend]
    parsed = parse_url(url)
    if parsed.dialect != "sqlite" and (
        parsed.database in FORBIDDEN_DATABASES or parsed.database.startswith("batchq_test")
    ):
        raise SystemExit(f"refusing to benchmark in database {parsed.database!r}")
    return url


def bench_env(backend: str, **extra: str) -> dict[str, str]:
    """Environment for `batchq run` and floor subprocesses: no-op jobs importable from bench/."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(BENCH_DIR) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["BATCHQ_TASK_MODULES"] = "noop_jobs"
    env["BATCHQ_URL"] = url_for(backend)
    env.update(extra)
    return env
