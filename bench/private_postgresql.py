"""A private PostgreSQL cluster for one benchmark run, so that server settings (autovacuum) can
differ from the shared server's without touching it: initdb into a temporary folder, start on a
private port, create the benchmark database; stop and delete the folder at the end.

    with private_cluster({"autovacuum": "on"}) as url: ...

initdb refuses to run as root, so as root the cluster belongs to the `postgres` OS user.
The durability settings are the shared server's defaults (fsync, synchronous_commit on), so the
figures compare with the other benchmarks'; only the settings given differ.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

PG_BIN = Path(os.environ.get("BENCH_PG_BIN", "/usr/lib/postgresql/15/bin"))
DATABASE = "batchq_bench_steady"
# As the shared server (shared_buffers 128MB, the Debian default); everything else initdb's.
BASE_SETTINGS = {"shared_buffers": "128MB", "listen_addresses": "127.0.0.1"}


def cluster_port() -> int:
    """BENCH_PRIVATE_PG_PORT, else a free port: two runs on one machine never collide."""
    if os.environ.get("BENCH_PRIVATE_PG_PORT"):
        return int(os.environ["BENCH_PRIVATE_PG_PORT"])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def parse_settings(text: str) -> dict[str, str]:
    """'autovacuum=on,autovacuum_naptime=60' -> {'autovacuum': 'on', ...}: an argparse type."""
    pairs = [part.split("=", 1) for part in text.split(",") if part]
    if any(len(pair) != 2 for pair in pairs):
        raise ValueError(f"expected name=value[,name=value...], got {text!r}")
    return {name.strip(): value.strip() for name, value in pairs}


@contextmanager
def private_cluster(settings: Mapping[str, str]) -> Iterator[str]:
    """Start a throw-away cluster with ``settings``; yield the benchmark database's URL."""
    folder = Path(tempfile.mkdtemp(prefix="batchq_steady_pg_"))
    port = cluster_port()
    data = folder / "data"
    _chown(folder)
    try:
        _as_owner([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"])
        options = " ".join(f"-c {k}={v}" for k, v in {**BASE_SETTINGS, "port": str(port), **settings}.items())
        options += f" -k {folder}"  # its Unix socket in its own folder, not the shared one's
        start = [str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-o", options, "-w"]
        _as_owner([*start, "start"])
        try:
            _as_owner(
                [str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", DATABASE]
            )
            yield f"postgresql://postgres@127.0.0.1:{port}/{DATABASE}"
        finally:
            _as_owner([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _as_owner(cmd: list[str]) -> None:
    """Run a PostgreSQL binary as the cluster's owner (postgres when we are root)."""
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def _chown(folder: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
