"""Private, throwaway database servers for tests that restart or kill the server itself.

They run on their own ports and data directories under a temporary folder, so
restarting them disturbs nothing else on the machine.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports: all held at once while they are picked, so that no two are
    the same (one at a time, the kernel may hand a port just let go out again)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def wait_port(port: int, up: bool = True, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            if up:
                return
        except OSError:
            if not up:
                return
        time.sleep(0.1)
    raise RuntimeError(f"port {port} did not come {'up' if up else 'down'} in {timeout}s")


class PrivateMariaDB:
    def __init__(self, root: Path) -> None:
        self.root, self.port = root, free_port()
        self.datadir = root / "data"
        self.proc: subprocess.Popen[bytes] | None = None
        subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={self.datadir}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            check=True,
            capture_output=True,
        )

    @property
    def url(self) -> str:
        return f"mysql://root@127.0.0.1:{self.port}/mysql"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "/usr/sbin/mariadbd",
                "--no-defaults",
                f"--datadir={self.datadir}",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--socket={self.root / 'sock'}",
                "--user=root",
                f"--log-error={self.root / 'error.log'}",
                "--innodb-buffer-pool-size=32M",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=60)
            self.proc = None
        wait_port(self.port, up=False)

    def restart(self) -> None:
        self.stop()
        self.start()

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class PrivatePostgreSQL:
    def __init__(self) -> None:
        # Its own folder directly under /tmp: the postgres user must be able to reach it.
        self.root, self.port = Path(tempfile.mkdtemp(prefix="batchq-pg-")), free_port()
        self.root.chmod(0o755)
        self.datadir = self.root / "pgdata"
        self.bin = Path(sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1])
        self._as_postgres = os.getuid() == 0  # initdb refuses to run as root
        if self._as_postgres:
            shutil.chown(self.root, "postgres")
        self._run([str(self.bin / "initdb"), "-D", str(self.datadir), "-A", "trust", "-U", "postgres"])

    def _run(self, argv: list[str]) -> None:
        if self._as_postgres:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        subprocess.run(argv, check=True, capture_output=True)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        self._run(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.datadir),
                "-l",
                str(self.root / "log"),
                "-w",
                "-o",
                f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1",
                "start",
            ]
        )
        wait_port(self.port)

    def stop(self) -> None:
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.datadir), "-m", "fast", "-w", "stop"])

    def restart(self) -> None:
        self.stop()
        self.start()

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
