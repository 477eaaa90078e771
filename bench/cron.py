"""Cron cost: wall time of `batchq run` on an empty queue against bare interpreters.

    .venv/bin/python bench/cron.py --backend mysql --repeat 20      (or sqlite, postgresql)

Rows (each a fresh process, run --repeat times, interleaved, wall seconds from spawn to exit):
  python -c pass
  python -c "import pymysql, click"          (the target's reference on MySQL/MariaDB)
  python -c "import sqlite3, click"          (the same for SQLite)
  python -c "import psycopg, click"          (the same for PostgreSQL; only with --backend postgresql)
  raw driver one-liner                       (import the driver, connect, SELECT 1, exit)
  batchq run                                 (the console script, on an empty queue)
MySQL/MariaDB also gets both without TLS (PyMySQL's default builds a TLS context for every
connection, ~20 ms, even when the server offers no TLS): ssl_disabled=True, ?sslmode=disable.
Python is the venv's interpreter; the page cache is warm (one untimed run of each first).
batchq's own modules are byte-compiled first (`compileall`), as `pip install` does: the editable
checkout would otherwise be compiled on every start wherever PYTHONDONTWRITEBYTECODE is set.
On PostgreSQL `batchq run` also takes its advisory liveness lock, like every worker there.
"""

from __future__ import annotations

import statistics
import subprocess
import time

from batchq.core.config import parse_url

from loads import reset
from options import parse, parser
from procs import compile_batchq
from report import command_line, emit, table
from settings import BATCHQ, PYTHON, REPO_DIR, bench_env, url_for
from stats import med_range

DRIVERS = {"mysql": "pymysql", "sqlite": "sqlite3", "postgresql": "psycopg"}


def raw_driver(backend: str, url: str, no_tls: bool = False) -> str:
    """The raw driver one-liner for the benchmark URL: import, connect, SELECT 1, close."""
    if backend == "postgresql":  # psycopg takes the URL as it is (libpq's URI form)
        return f"import psycopg; c = psycopg.connect({url!r}); c.execute('SELECT 1'); c.close()"
    u = parse_url(url)
    if backend == "sqlite":
        return f"import sqlite3; c = sqlite3.connect({u.database!r}); c.execute('SELECT 1'); c.close()"
    tls = ", ssl_disabled=True" if no_tls else ""
    where = f"host={u.host!r}, port={u.port or 3306}, user={u.user or 'root'!r}, password={u.password!r}"
    return (
        f"import pymysql; c = pymysql.connect({where}, database={u.database!r}{tls}); "
        "c.cursor().execute('SELECT 1'); c.close()"
    )


def wall(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=REPO_DIR, check=True)
    return time.perf_counter() - t0


def main() -> None:
    args = parse(parser(__doc__, repeat=20, quick={"repeat": 5}))
    reset(args.backend)
    compile_batchq()
    env = bench_env(args.backend)
    driver = DRIVERS[args.backend]
    raw = raw_driver(args.backend, url_for(args.backend))
    refs = ["pymysql", "sqlite3"] + (["psycopg"] if driver == "psycopg" else [])
    cmds = {
        "`python -c pass`": [PYTHON, "-c", "pass"],
        **{f'`python -c "import {m}, click"`': [PYTHON, "-c", f"import {m}, click"] for m in refs},
        f"raw driver: `python -c` {driver}: connect, SELECT 1, exit": [PYTHON, "-c", raw],
        "`batchq run` on an empty queue": [BATCHQ, "run"],
    }
    no_tls = "`batchq run`, URL with `?sslmode=disable`"
    if args.backend == "mysql":
        cmds["raw driver, `ssl_disabled=True`"] = [PYTHON, "-c", raw_driver("mysql", url_for("mysql"), True)]
        cmds[no_tls] = [BATCHQ, "run"]
    envs = {name: env for name in cmds}
    if no_tls in cmds:
        envs[no_tls] = {**env, "BATCHQ_URL": env["BATCHQ_URL"] + "?sslmode=disable"}
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for name, cmd in cmds.items():
        wall(cmd, envs[name])  # warm the page cache
    for _ in range(args.repeat):
        for name, cmd in cmds.items():
            times[name].append(wall(cmd, envs[name]))
    ref = statistics.median(times[f'`python -c "import {driver}, click"`'])
    rows = [[name, med_range(t, "{:.3f}"), f"{statistics.median(t) / ref:.2f}×"] for name, t in times.items()]
    text = table(["command", "wall s median (min–max)", f"÷ `import {driver}, click`"], rows)
    text += (
        f"\n\n{args.repeat} runs of each, interleaved, after one untimed warm-up run; "
        f"BATCHQ_URL={env['BATCHQ_URL']}.\nCommand: {command_line()}"
    )
    emit(f"cron cost: empty-queue start-up, {args.backend}", text, f"cron-{args.backend}")


if __name__ == "__main__":
    main()
