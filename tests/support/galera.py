"""A private 3-node MariaDB Galera cluster on this machine, for the Galera scenarios and bench.

Debian's galera-4 and mariadb-server (scripts/ensure-servers installs them); every node has its
own data directory under a temporary folder and its own ports on 127.0.0.1 (SQL, gcomm, IST,
SST), free ones picked for each cluster, so the cluster disturbs nothing else, and two test runs
(or a test run and a benchmark) on one machine each have their own. Node 1 bootstraps the
cluster (--wsrep-new-cluster); the others join it by state transfer (rsync). A node can be
killed with SIGKILL and started again: it rejoins (IST from a peer's gcache, or a full SST).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pymysql

from tests.support.servers import free_ports, wait_port

PROVIDER = Path("/usr/lib/galera/libgalera_smm.so")
JOIN_TIMEOUT = 120.0


def _server_user() -> str:
    """mariadbd drops root privileges to `mysql`; so must the data dirs (and rsync's SST daemon,
    which, run as root, would switch to `nobody` and be refused the data dir)."""
    return "mysql" if os.getuid() == 0 else pwd.getpwuid(os.getuid()).pw_name


@dataclass(frozen=True)
class NodePorts:
    """A node's ports, kept across its restarts (its peers know its gcomm address)."""

    sql: int
    gcomm: int
    ist: int
    sst: int


class GaleraNode:
    def __init__(self, root: Path, index: int, peers: str, ports: NodePorts) -> None:
        self.root, self.index, self.peers = root, index, peers
        self.ports = ports
        self.port = ports.sql
        self.gcomm = ports.gcomm
        self.datadir = root / f"node{index + 1}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.user = _server_user()
        subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={self.datadir}",
                f"--user={self.user}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            check=True,
            capture_output=True,
            env=self._env(),
        )

    def _env(self) -> dict[str, str]:
        """The server's temporary files in the cluster's folder: the server user may not be able
        to write into this run's TMPDIR."""
        return {**os.environ, "TMPDIR": str(self.root)}

    @property
    def name(self) -> str:
        return f"node{self.index + 1}"

    def url(self, database: str) -> str:
        return f"mysql://root@127.0.0.1:{self.port}/{database}"

    def _argv(self, bootstrap: bool) -> list[str]:
        provider_options = ";".join(
            [
                f"gmcast.listen_addr=tcp://127.0.0.1:{self.gcomm}",
                f"ist.recv_addr=127.0.0.1:{self.ports.ist}",
                "gcache.size=128M",  # room for IST after a kill mid-drain
                "evs.suspect_timeout=PT3S",  # notice a SIGKILLed peer in seconds, not 5s+
                "evs.inactive_timeout=PT6S",
            ]
        )
        argv = [
            "/usr/sbin/mariadbd",
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={self.root / (self.name + '.sock')}",
            f"--user={self.user}",
            f"--log-error={self.root / (self.name + '.err')}",
            "--innodb-buffer-pool-size=64M",
            "--max-connections=200",
            # What Galera requires: row events, InnoDB, interleaved auto-increment locks.
            "--binlog-format=ROW",
            "--default-storage-engine=InnoDB",
            "--innodb-autoinc-lock-mode=2",
            "--wsrep-on=ON",
            f"--wsrep-provider={PROVIDER}",
            "--wsrep-cluster-name=batchq-test",
            f"--wsrep-cluster-address={self.peers}",
            f"--wsrep-node-address=127.0.0.1:{self.gcomm}",
            f"--wsrep-node-name={self.name}",
            f"--wsrep-provider-options={provider_options}",
            f"--wsrep-sst-receive-address=127.0.0.1:{self.ports.sst}",
            "--wsrep-sst-method=rsync",
            "--wsrep-slave-threads=2",
        ]
        return [*argv, "--wsrep-new-cluster"] if bootstrap else argv

    def start(self, bootstrap: bool = False) -> None:
        self.proc = subprocess.Popen(
            self._argv(bootstrap), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self._env()
        )
        self.wait_synced()

    def wait_synced(self, timeout: float = JOIN_TIMEOUT) -> None:
        """Wait until the node serves SQL and is Synced with the cluster."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"galera {self.name} exited ({self.proc.returncode}): {self.log_tail()}")
            if self.state() == "Synced":
                return
            time.sleep(0.2)
        raise RuntimeError(f"galera {self.name} not Synced after {timeout}s: {self.log_tail()}")

    def state(self) -> str | None:
        try:
            conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root", connect_timeout=2)
        except pymysql.err.Error:
            return None
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW STATUS LIKE 'wsrep_local_state_comment'")
                row = cur.fetchone()
            return str(row[1]) if row else None
        finally:
            conn.close()

    def isolate(self, on: bool) -> None:
        """Cut the node off from its peers (gmcast.isolate), or let it back: cut off, it leaves
        the primary component and refuses SQL with error 1047 until it is back and synced."""
        conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root", autocommit=True)
        try:
            with conn.cursor() as cur:
                cur.execute("SET GLOBAL wsrep_provider_options = %s", (f"gmcast.isolate={int(on)}",))
        finally:
            conn.close()

    def kill(self) -> None:
        """SIGKILL the node, as a crashed host would go."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None
        wait_port(self.port, up=False)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def log_tail(self, lines: int = 15) -> str:
        path = self.root / (self.name + ".err")
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


class GaleraCluster:
    """Three nodes on 127.0.0.1; ``urls(db)`` gives one URL per node."""

    def __init__(self, size: int = 3) -> None:
        if not PROVIDER.exists():
            raise RuntimeError(f"{PROVIDER} is missing: run scripts/ensure-servers (installs galera-4)")
        picked = free_ports(4 * size)
        ports = [NodePorts(*picked[4 * i : 4 * i + 4]) for i in range(size)]
        self.root = Path(tempfile.mkdtemp(prefix="batchq-galera-"))
        self.root.chmod(0o755)
        shutil.chown(self.root, _server_user())
        peers = "gcomm://" + ",".join(f"127.0.0.1:{node.gcomm}" for node in ports)
        self.nodes = [GaleraNode(self.root, i, peers, ports[i]) for i in range(size)]

    def start(self) -> None:
        first, *others = self.nodes
        first.start(bootstrap=True)
        for node in others:  # one at a time: node 1 donates one state transfer at a time
            node.start()

    def urls(self, database: str) -> list[str]:
        return [node.url(database) for node in self.nodes]

    def restart(self, node: GaleraNode) -> None:
        """Start a killed node again: it rejoins the running cluster (never bootstraps)."""
        node.start()

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
