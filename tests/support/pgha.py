"""Private PostgreSQL setups past one server: a primary with a synchronous streaming standby, and
a PgBouncer in transaction mode. Started by the tests themselves, on their own ports and folders
under a temporary directory, as servers.py starts single servers for restart scenarios.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from tests.support.servers import PrivatePostgreSQL, free_port, wait_port

STANDBY_NAME = "standby1"  # the standby's application_name, named in synchronous_standby_names
PGBOUNCER = "/usr/sbin/pgbouncer"


class _Node(PrivatePostgreSQL):
    """One server of the pair; its data directory is made by initdb (the primary) or by
    pg_basebackup (the standby), and it starts with its own extra settings."""

    def __init__(self, root: Path, name: str, settings: dict[str, str]) -> None:
        # PrivatePostgreSQL.__init__ runs initdb; the pair lays out its own folders instead.
        self.root, self.port = root, free_port()
        self.datadir = root / name
        self.log = root / f"{name}.log"
        self.bin = Path(sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1])  # as PrivatePostgreSQL
        self._as_postgres = os.getuid() == 0  # initdb and postgres refuse to run as root
        self.settings = settings

    def start(self) -> None:
        extra = " ".join(f"-c {name}={value}" for name, value in self.settings.items())
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 {extra}"
        self._run(
            [str(self.bin / "pg_ctl"), "-D", str(self.datadir), "-l", str(self.log), "-w"]
            + ["-o", options, "start"]
        )
        wait_port(self.port)

    def kill(self) -> None:
        """Stop at once, as a crash would: no checkpoint, clients cut off mid-statement."""
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.datadir), "-m", "immediate", "-w", "stop"])

    def promote(self) -> None:
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.datadir), "-w", "promote"])

    def running(self) -> bool:
        return (self.datadir / "postmaster.pid").exists()


class PrimaryStandby:
    """A primary and a streaming standby; commits wait for the standby (synchronous replication,
    synchronous_commit=on: the commit's WAL is flushed on the standby before the client hears OK)."""

    def __init__(self, database: str = "batchq_failover") -> None:
        self.root = Path(tempfile.mkdtemp(prefix="batchq-pgha-"))  # under /tmp: postgres reaches it
        self.root.chmod(0o755)
        self.database = database
        self.primary = _Node(self.root, "primary", {"synchronous_standby_names": STANDBY_NAME})
        # The standby, once promoted, has no standby of its own: it must not wait for one.
        self.standby = _Node(self.root, "standby", {"hot_standby": "on"})
        if self.primary._as_postgres:
            shutil.chown(self.root, "postgres")
        self.primary._run(
            [
                str(self.primary.bin / "initdb"),
                "-D",
                str(self.primary.datadir),
                "-A",
                "trust",
                "-U",
                "postgres",
            ]
        )

    @property
    def url(self) -> str:
        """The multi-host URL: whichever server accepts writes."""
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
        return (
            f"postgresql://postgres@{hosts}/{self.database}?target_session_attrs=read-write&connect_timeout=2"
        )

    def start(self) -> None:
        self.primary.start()
        self.primary._run(
            [
                str(self.primary.bin / "pg_basebackup"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.primary.port),
                "-U",
                "postgres",
                "-D",
                str(self.standby.datadir),
                "-X",
                "stream",
            ]
        )
        conninfo = f"host=127.0.0.1 port={self.primary.port} user=postgres application_name={STANDBY_NAME}"
        self._append_as_owner(
            self.standby.datadir / "postgresql.auto.conf", f"primary_conninfo = '{conninfo}'\n"
        )
        self._append_as_owner(self.standby.datadir / "standby.signal", "")
        self.standby.start()

    def _append_as_owner(self, path: Path, text: str) -> None:
        with path.open("a") as file:
            file.write(text)
        if self.primary._as_postgres:
            shutil.chown(path, "postgres")

    def fail_over(self) -> None:
        """The primary dies (pg_ctl stop -m immediate); the standby is promoted in its place."""
        self.primary.kill()
        self.standby.promote()

    def stop(self) -> None:
        for node in (self.standby, self.primary):
            if node.running():
                node.kill()
        shutil.rmtree(self.root, ignore_errors=True)


class PrivatePgBouncer:
    """PgBouncer in transaction mode on a private port, in front of a PostgreSQL server.

    Debian 12's PgBouncer is 1.18: in transaction mode it knows nothing of prepared statements
    (1.21+ can track protocol-level ones with max_prepared_statements), so batchq must not
    prepare any.
    """

    def __init__(
        self, server_port: int = 5432, pool_mode: str = "transaction", server_host: str = "127.0.0.1"
    ) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="batchq-pgbouncer-"))
        self.root.chmod(0o755)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        (self.root / "users.txt").write_text('"postgres" ""\n')
        settings = {
            "listen_addr": "127.0.0.1",
            "listen_port": str(self.port),
            "unix_socket_dir": "",
            "auth_type": "trust",
            "auth_file": str(self.root / "users.txt"),
            "pool_mode": pool_mode,
            "max_client_conn": "500",
            "default_pool_size": "20",
            "logfile": str(self.root / "pgbouncer.log"),
            "pidfile": str(self.root / "pgbouncer.pid"),
        }
        ini = ["[databases]", f"* = host={server_host} port={server_port}", "[pgbouncer]"]
        ini += [f"{name} = {value}" for name, value in settings.items()]
        (self.root / "pgbouncer.ini").write_text("\n".join(ini) + "\n")
        if os.getuid() == 0:  # PgBouncer refuses to run as root
            for path in (self.root, *self.root.iterdir()):
                shutil.chown(path, "postgres")

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}?pgbouncer=transaction"

    def start(self) -> None:
        argv = [PGBOUNCER, str(self.root / "pgbouncer.ini")]
        if os.getuid() == 0:
            argv[1:1] = ["-u", "postgres"]  # it switches user itself: self.proc is PgBouncer
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, timeout=30)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGINT)  # PgBouncer: SIGINT is a quick shutdown
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        shutil.rmtree(self.root, ignore_errors=True)
