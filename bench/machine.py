"""What the figures were measured on: the database server's settings and the machine."""

from __future__ import annotations

import os
import platform
import sqlite3
from pathlib import Path

from floors import floor_for

MYSQL_SETTINGS = [
    "version",
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "log_bin",
    "innodb_doublewrite",
    "innodb_flush_method",
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "global.tx_isolation",
]
POSTGRESQL_SETTINGS = [
    "server_version",
    "fsync",
    "synchronous_commit",
    "wal_level",
    "shared_buffers",
    "default_transaction_isolation",
    "full_page_writes",
]


def server_info(backend: str) -> dict[str, str]:
    floor = floor_for(backend)
    if backend == "mysql":
        values = floor.execute("SELECT " + ", ".join(f"@@{n}" for n in MYSQL_SETTINGS))[0]
        info = dict(zip(MYSQL_SETTINGS, (str(v) for v in values)))
        # Set by batchq's session_isolation, which the floors run too.
        info["session isolation (batchq and floor)"] = str(floor.execute("SELECT @@tx_isolation")[0][0])
    elif backend == "postgresql":
        sql = "SELECT " + ", ".join(f"current_setting('{n}')" for n in POSTGRESQL_SETTINGS)
        info = dict(zip(POSTGRESQL_SETTINGS, (str(v) for v in floor.execute(sql)[0])))
    else:
        info = {
            "sqlite version": sqlite3.sqlite_version,
            "journal_mode": str(floor.execute("PRAGMA journal_mode")[0][0]),
            "synchronous": str(floor.execute("PRAGMA synchronous")[0][0]) + " (0 OFF, 1 NORMAL, 2 FULL)",
            "file": floor.url.database,
        }
    floor.close()
    return info


def machine_info() -> dict[str, str]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        mem_gib = f"{int(mem) / 1024**2:.1f} GiB"
    except OSError:
        mem_gib = "?"
    return {
        "cpu": f"{cpu} x {os.cpu_count()}",
        "memory": mem_gib,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "pymysql": _version_of("pymysql"),
        "psycopg": _version_of("psycopg"),
    }


def _version_of(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"
