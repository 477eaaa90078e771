"""Workers keep their liveness: unique names, idle timeouts, ghost sessions (issue 9, items 4, 5, 15)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.backends import create_backend
from batchq.backends.liveness import owner_name
from batchq.core.config import parse_url
from batchq.errors import BackendUnavailable
from batchq.runtime.sweeps import StuckJob, gc_processing
from tests.support.cli import invoke_batchq
from tests.support.db import create_database, job_rows, ledger, prepare_database
from tests.support.harness import FIGURES, Figures, account
from tests.support.processes import assert_one_line_error, batchq_env, run_batchq, start_batchq, wait_for
from tests.support.queries import query
from tests.support.servers import PrivateMariaDB, PrivatePostgreSQL
from tests.support.tcp_proxy import TcpProxy

# `batchq` in a process that believes it is PID 1 on host "box", as in a container.
AS_PID_1 = (
    "import os, socket, sys; os.getpid = lambda: 1; socket.gethostname = lambda: 'box'; "
    "from batchq.cli import cli; cli(sys.argv[1:], prog_name='batchq')"
)


@pytest.mark.slow
def test_two_containers_with_one_hostname_each_running_batchq_as_pid_1(
    server_name: str, server_url: str
) -> None:
    queue = Queue(server_url, task_modules=["jobs"])
    queue.enqueue_many("jobs:record", [{"n": n, "sleep": 0.3} for n in range(8)])
    args = ["run", "--max-procs-per-host", "64", "--wait", "1"]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", AS_PID_1, *args],
            env=batchq_env(server_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [worker.communicate(timeout=60) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], results
    assert ledger(queue) == list(range(8))
    assert job_rows(queue) == []
    queue.close()


# -- helpers ---------------------------------------------------------------------------------


TASK_MODULES = "jobs,liveness_jobs"
LONG_JOB = "liveness_jobs:record_then_sleep"


class SweepLoop:
    """`gc-processing` every 0.2 s on a connection of its own, as an eager cron would run it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.requeued: list[StuckJob] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sweep, daemon=True)

    def __enter__(self) -> SweepLoop:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sweep(self) -> None:
        queue = Queue(self.url)
        try:
            while not self._stop.wait(0.2):
                try:
                    self.requeued += gc_processing(queue).requeued
                except BackendUnavailable:  # its own session cut (a 1 s idle timeout, a slow machine)
                    queue.close()
        finally:
            queue.close()


def _start_worker(url: str, *args: str, **env: str) -> subprocess.Popen[str]:
    return start_batchq(url, "-v", "run", *args, BATCHQ_TASK_MODULES=TASK_MODULES, **env)


def _fresh_look(url: str) -> tuple[list[int], list[dict[str, Any]]]:
    """The ledger and the job rows, on a new connection (an idle one may have been cut)."""
    queue = Queue(url)
    try:
        return ledger(queue), job_rows(queue)
    finally:
        queue.close()


# -- item 4: idle timeouts -------------------------------------------------------------------


@pytest.fixture
def short_idle_server(server_name: str, tmp_path: Path) -> Iterator[str]:
    """A private server that ends any session idle for 1 s (as managed servers do, in minutes).

    Private, because the setting is server-wide. Yields a prepared database URL.
    """
    server = PrivateMariaDB(tmp_path / "mariadb") if server_name == "mysql" else PrivatePostgreSQL()
    server.start()
    try:
        url = server.url.rsplit("/", 1)[0] + "/batchq_idle"
        create_database(url)
        prepare_database(server_name, url)
        admin = create_backend(url)
        with admin.errors():
            cur = admin.conn.cursor()
            cur.execute(query(server_name, "server_idle_timeout_short"))
            if server_name == "postgresql":  # ALTER SYSTEM writes the setting; a reload applies it
                cur.execute(query(server_name, "server_reload_conf"))
        admin.close()
        yield url
    finally:
        server.stop()
        server.remove()


@pytest.mark.slow
def test_a_job_longer_than_the_server_idle_timeout_runs_once(
    server_name: str, short_idle_server: str
) -> None:
    url = short_idle_server
    queue = Queue(url, task_modules=["liveness_jobs"])
    queue.enqueue(LONG_JOB, {"n": 0, "sleep": 2.5}, max_errors=3)
    queue.close()
    # The heartbeat is off: the session's own idle limit, raised by the worker, must hold.
    with SweepLoop(url) as sweeps:
        worker = _start_worker(url, "--heartbeat", "0", "--backoff", "0.1s", "--wait", "2s")
        out, err = worker.communicate(timeout=60)
    seen, rows = _fresh_look(url)
    figures = Figures(server_name, "idle timeout 1s, a 2.5s job", 1, 1)
    figures.lost, figures.duplicates = len({0} - set(seen)), len(seen) - len(set(seen))
    FIGURES.append(figures)
    assert worker.returncode == 0, err
    assert sweeps.requeued == []
    assert seen == [0]  # ran once
    assert rows == []


@pytest.mark.slow
@pytest.mark.parametrize(("heartbeat", "cut"), [("0.3s", False), ("0", True)])
def test_the_heartbeat_outlives_a_proxy_idle_timeout(
    server_name: str, server_url: str, heartbeat: str, cut: bool
) -> None:
    """A load balancer that closes connections idle for 1 s: no session setting helps there."""
    queue = Queue(server_url, task_modules=["liveness_jobs"])
    queue.enqueue(LONG_JOB, {"n": 0, "sleep": 3}, max_errors=2)
    with TcpProxy(_port(server_url), idle_cut=1.0) as proxy, SweepLoop(server_url) as sweeps:
        worker = _start_worker(
            proxy.url_for(server_url),
            *("--heartbeat", heartbeat, "--backoff", "0.1s", "--wait", "1s", "--poll-interval", "0.2s"),
            LEDGER_URL=server_url,
        )
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    if cut:  # the control: without a heartbeat the job's session is cut and the job runs again
        assert sweeps.requeued and len(ledger(queue)) > 1
        return
    row = account(queue, 1, Figures(server_name, "proxy idle cut 1s, heartbeat 0.3s, 3s job", 1, 1))
    assert sweeps.requeued == []
    assert (row.lost, row.duplicates) == (0, 0)
    assert job_rows(queue) == []
    queue.close()


def _port(url: str) -> int:
    return int(parse_url(url).port or {"mysql": 3306, "postgresql": 5432}[parse_url(url).dialect])


# -- item 5: ghost sessions ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("heartbeat", ["0.3s", "0"])  # noticed by the heartbeat, or at the finish
def test_a_worker_ends_its_ghost_session_and_finishes_its_job(
    server_name: str, server_url: str, heartbeat: str
) -> None:
    queue = Queue(server_url, task_modules=["liveness_jobs"])
    queue.enqueue(LONG_JOB, {"n": 0, "sleep": 3})
    with TcpProxy(_port(server_url)) as proxy, SweepLoop(server_url) as sweeps:
        worker = _start_worker(proxy.url_for(server_url), "--heartbeat", heartbeat, LEDGER_URL=server_url)
        wait_for(lambda: ledger(queue) == [0])  # the job runs
        proxy.drop()  # the worker's connection is gone; the server keeps its session and lock
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "previous database session" in err  # it ended its ghost to take its lock back
    assert sweeps.requeued == []  # the lock was never free: the job was never taken back
    scenario = f"ghost session (connection dropped), worker lives, heartbeat {heartbeat}"
    row = account(queue, 1, Figures(server_name, scenario, 1, 1))
    assert (row.lost, row.duplicates) == (0, 0)
    assert job_rows(queue) == []  # its finished job did not stay processing
    queue.close()


def test_a_sweep_never_sees_a_worker_dead_while_it_takes_its_lock_back_from_its_ghost(
    server_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The ghost frees the lock before the worker's wait for it can be queued; the handover
    lock covers that gap (without it, 7 takeovers in 10 were seen dead by a polling sweep)."""
    takeovers, seen_dead = 20, 0
    watcher = create_backend(server_url)

    def watch(stop: threading.Event) -> None:
        nonlocal seen_dead
        while not stop.is_set():
            seen_dead += watcher.liveness.is_alive(worker) is False

    with TcpProxy(_port(server_url)) as proxy:
        backend = create_backend(proxy.url_for(server_url))
        worker = owner_name()
        backend.liveness.hold(worker)
        for _ in range(takeovers):
            proxy.drop()
            stop = threading.Event()
            watching = threading.Thread(target=watch, args=(stop,))
            watching.start()
            backend.liveness.ping()  # the connection is gone: reconnect, end the ghost, take the lock
            stop.set()
            watching.join()
        backend.close()
    watcher.close()
    assert caplog.text.count("previous database session") == takeovers
    assert seen_dead == 0


@pytest.mark.slow
def test_gc_processing_puts_back_a_job_whose_worker_vanished_behind_a_ghost_session(
    server_name: str, server_url: str, tmp_path: Path
) -> None:
    queue = Queue(server_url, task_modules=["liveness_jobs"])
    hang_until = tmp_path / "go"
    job_id = queue.enqueue(LONG_JOB, {"n": 0, "sleep": 60, "until": str(hang_until)})
    with TcpProxy(_port(server_url)) as proxy:
        worker = _start_worker(proxy.url_for(server_url), "--heartbeat", "0.3s", LEDGER_URL=server_url)
        wait_for(lambda: ledger(queue) == [0])
        # The worker's host goes away at the moment the middlebox forgets the connection.
        worker.send_signal(signal.SIGSTOP)  # (frozen first, so that it cannot reconnect)
        proxy.drop()
        worker.kill()
        worker.wait()
        [owner] = [row["locked_by"] for row in job_rows(queue)]
        assert queue.backend.liveness.is_alive(owner) is True  # to the server, the ghost holds the lock
        assert gc_processing(queue).requeued == []  # without --ghost-after: taken for alive
        time.sleep(2)  # the ghost sits idle; a live worker's heartbeat would have pinged
        gc = invoke_batchq(server_url, "gc-processing", "--ghost-after", "1.5s", "--worker-heartbeat", "0.3s")
        assert gc.returncode == 3, gc.stderr
        assert f"#{job_id}" in gc.stdout and "is gone" in gc.stdout
        [row] = job_rows(queue)
        assert (row["status"], row["error_count"]) == ("ready", 1)
        assert "ghost session" in row["last_error"] and "ended" in row["last_error"]
        wait_for(lambda: queue.backend.liveness.is_alive(owner) is False, timeout=5)  # the ghost was ended
    hang_until.touch()
    rerun = run_batchq(server_url, "run", BATCHQ_TASK_MODULES=TASK_MODULES)
    assert rerun.returncode == 0, rerun.stderr
    row = account(queue, 1, Figures(server_name, "ghost session, worker vanished", 1, 1, kills=1, bound=1))
    assert row.lost == 0 and row.duplicates <= row.bound
    assert job_rows(queue) == []
    queue.close()


@contextmanager
def _one_long_job(server_url: str, tmp_path: Path, *run_args: str) -> Iterator[Queue]:
    """A live worker (`batchq run *run_args`) running one job that hangs until the block ends;
    then the job is let finish: it ran once, and the worker exited 0 (killed if the block fails)."""
    queue = Queue(server_url, task_modules=["liveness_jobs"])
    hang_until = tmp_path / "go"
    queue.enqueue(LONG_JOB, {"n": 0, "sleep": 60, "until": str(hang_until)})
    worker = _start_worker(server_url, "--max-jobs", "1", *run_args)
    try:
        wait_for(lambda: ledger(queue) == [0])
        yield queue
        hang_until.touch()
        assert worker.wait(timeout=60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.communicate()
    assert ledger(queue) == [0]  # run once
    assert job_rows(queue) == []
    queue.close()


@pytest.mark.slow
def test_a_ghost_after_a_live_workers_heartbeat_cannot_satisfy_is_refused(
    server_url: str, tmp_path: Path
) -> None:
    """A healthy worker (the default 30s heartbeat) runs a job whose session sits idle between
    beats: --ghost-after 0, or under two heartbeats, would take it for a ghost and run its job
    twice. It is refused before the sweep reads anything; the job runs once."""
    with _one_long_job(server_url, tmp_path) as queue:
        time.sleep(2)  # the worker's session sits idle: its next beat is up to 30s away
        for too_short in ("0", "10s", "59s"):
            refused = invoke_batchq(server_url, "gc-processing", "--ghost-after", too_short)
            assert_one_line_error(refused, f"--ghost-after {too_short.rstrip('s')}", "too short", status=2)
        slower = ("--ghost-after", "1m", "--worker-heartbeat", "40s")  # beats slower: 1m is short
        assert_one_line_error(invoke_batchq(server_url, "gc-processing", *slower), "1m20s or more", status=2)
        [row] = job_rows(queue)
        assert (row["status"], row["error_count"]) == ("processing", 0)
        allowed = invoke_batchq(server_url, "gc-processing", "--ghost-after", "1m")
        assert (allowed.returncode, allowed.stdout, allowed.stderr) == (0, "", "")  # alive, idle < 1m


@pytest.mark.slow
def test_a_worker_beating_slower_than_the_sweep_was_told_is_not_taken_for_a_ghost(
    server_url: str, tmp_path: Path
) -> None:
    """The sweep is told the workers beat every second (--worker-heartbeat 1s), so --ghost-after
    2s passes its check; this worker beats every 4 s, and its session sits idle up to 4 s between
    beats. The sweep reads the heartbeat the worker registered and waits two of them: the job
    of the live worker is never put back, however often the sweep runs."""
    with _one_long_job(server_url, tmp_path, "--heartbeat", "4s") as queue:
        deadline = time.monotonic() + 9  # two beats and more: idle passes 2 s between them
        while time.monotonic() < deadline:
            report = gc_processing(queue, ghost_after=2, heartbeat=1)
            assert report.requeued == [], report.requeued
            time.sleep(0.2)
        [row] = job_rows(queue)
        assert (row["status"], row["error_count"]) == ("processing", 0)


@pytest.mark.slow
def test_gc_processing_sees_and_ends_ghosts_only_with_the_privileges_documented(
    server_name: str, server_url: str, tmp_path: Path
) -> None:
    """Without PROCESS / pg_read_all_stats a ghost is taken for alive; without the right to
    end it, its job is still put back and last_error says the session was left."""
    queue = Queue(server_url, task_modules=["liveness_jobs"])
    hang_until = tmp_path / "go"
    queue.enqueue(LONG_JOB, {"n": 0, "sleep": 60, "until": str(hang_until)})
    with TcpProxy(_port(server_url)) as proxy, _unprivileged_user(server_name, server_url) as (url, grant):
        worker = _start_worker(proxy.url_for(server_url), "--heartbeat", "0.3s", LEDGER_URL=server_url)
        wait_for(lambda: ledger(queue) == [0])
        worker.send_signal(signal.SIGSTOP)
        proxy.drop()
        worker.kill()
        worker.wait()
        [owner] = [row["locked_by"] for row in job_rows(queue)]
        time.sleep(2)
        blind = invoke_batchq(url, "gc-processing", "--ghost-after", "1.5s", "--worker-heartbeat", "0.3s")
        assert (blind.returncode, blind.stdout, blind.stderr) == (0, "", "")
        assert job_rows(queue)[0]["status"] == "processing"  # a session it cannot see: alive
        grant()  # may see other users' sessions, may not end them
        seeing = invoke_batchq(url, "gc-processing", "--ghost-after", "1.5s", "--worker-heartbeat", "0.3s")
        assert seeing.returncode == 3, seeing.stderr
        [row] = job_rows(queue)
        assert row["status"] == "ready" and "not permitted to end it" in row["last_error"]
        assert queue.backend.liveness.is_alive(owner) is True  # the ghost was left to the server
        hang_until.touch()
    queue.close()


@contextmanager
def _unprivileged_user(server_name: str, server_url: str) -> Iterator[tuple[str, Callable[[], None]]]:
    """A user with rights on batchq's tables only; and a function granting it the right to see
    every session (MySQL PROCESS, PostgreSQL pg_read_all_stats), not to end them."""
    name = "batchq_live_gc"
    admin = create_backend(server_url)
    database = parse_url(server_url).database

    def run(*statements: str) -> None:
        with admin.errors():
            cur = admin.conn.cursor()
            for statement in statements:
                cur.execute(statement)
            cur.close()

    if server_name == "mysql":
        run(
            f"DROP USER IF EXISTS '{name}'@'%'",
            f"CREATE USER '{name}'@'%' IDENTIFIED BY 'gc-pass'",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{database}`.* TO '{name}'@'%'",
        )
        url = f"mysql://{name}:gc-pass@127.0.0.1:{_port(server_url)}/{database}"
        grant = f"GRANT PROCESS ON *.* TO '{name}'@'%'"
        drop = [f"DROP USER IF EXISTS '{name}'@'%'"]
    else:
        run(
            f"DROP OWNED BY {name}" if _pg_role_exists(admin, name) else "SELECT 1",
            f"DROP ROLE IF EXISTS {name}",
            f"CREATE ROLE {name} LOGIN",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {name}",
        )
        url = f"postgresql://{name}@127.0.0.1:{_port(server_url)}/{database}"
        grant = f"GRANT pg_read_all_stats TO {name}"
        drop = [f"DROP OWNED BY {name}", f"DROP ROLE IF EXISTS {name}"]
    try:
        yield url, lambda: run(grant)
    finally:
        _end_ghosts(admin, server_name)
        run(*drop)
        admin.close()


def _pg_role_exists(admin: Any, name: str) -> bool:
    with admin.errors():
        cur = admin.conn.cursor()
        cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,))
        found = cur.fetchone() is not None
        cur.close()
    return found


def _end_ghosts(admin: Any, server_name: str) -> None:
    """End the sessions a test's proxy left behind (as root / postgres)."""
    with admin.errors():
        cur = admin.conn.cursor()
        cur.execute(query(server_name, "sessions_idle"))
        for (session,) in cur.fetchall():
            cur.execute(query(server_name, "session_end"), {"session": session})
        cur.close()
