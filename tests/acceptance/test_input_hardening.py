"""Issue 9, items 2, 3, 12, 13 and part of 15: input that once slipped past batchq's checks.

Slot folders another user owns, passwords with special characters, URLs and values that
raised tracebacks, queue names with a trailing newline, delays of the wrong type or size,
and the CLI's smaller promises (gc-error --requeue counts, purge under cron, --url and -v
after the subcommand).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from batchq import ConfigError, MessageQueue, PayloadError, Queue
from batchq.core.config import parse_url
from tests.support.cli import invoke_batchq
from tests.support.db import SERVER_URLS, autocommit_connection, job_rows
from tests.support.processes import assert_one_line_error, batchq_cmd, batchq_env, run_batchq
from tests.support.servers import PrivatePostgreSQL

NESTED_DEPTH = 3000
UNREACHABLE = {"mysql": "127.0.0.1:1", "postgresql": "127.0.0.1:1"}


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


# -- item 2: per-host slot files ------------------------------------------------------------
# The slot folders live in the user's runtime folder ($XDG_RUNTIME_DIR/batchq), else under the
# home (~/.local/state), else in $TMPDIR: each test names its own, never the real home.


def private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, exist_ok=True)
    path.chmod(0o700)
    return path


def slot_files(base: Path) -> list[Path]:
    return sorted(base.glob("*/slot-*.lock"))


def test_slot_folder_owned_by_another_user_is_refused(queue: Queue, db_url: str, tmp_path: Path) -> None:
    """The slot folder is not this user's: refused with one line, never a silent exit 0."""
    runtime = private_dir(tmp_path / "run")
    folder = runtime / "batchq"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    queue.enqueue("jobs:noop")
    result = run_batchq(db_url, "run", XDG_RUNTIME_DIR=str(runtime))
    assert_one_line_error(result, str(folder), "owned by uid 65534")
    assert len(job_rows(queue)) == 1  # nothing ran


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775])
def test_slot_folder_others_can_write_to_is_refused(db_url: str, tmp_path: Path, mode: int) -> None:
    runtime = private_dir(tmp_path / "run")
    folder = runtime / "batchq"
    folder.mkdir()
    folder.chmod(mode)
    result = run_batchq(db_url, "run", XDG_RUNTIME_DIR=str(runtime))
    assert_one_line_error(result, str(folder), f"{mode:04o}")


def test_slot_folder_of_an_older_batchq_is_made_private(queue: Queue, db_url: str, tmp_path: Path) -> None:
    """batchq before 9 made the folders 0755: still this user's, nobody else could write there."""
    folder = tmp_path / f"batchq-{os.getuid()}"
    folder.mkdir()
    folder.chmod(0o755)
    queue.enqueue("jobs:noop")
    no_home = {"XDG_RUNTIME_DIR": "", "HOME": str(tmp_path / "no-home"), "XDG_STATE_HOME": ""}
    assert run_batchq(db_url, "run", TMPDIR=str(tmp_path), **no_home).returncode == 0
    assert job_rows(queue) == []
    assert folder.stat().st_mode & 0o777 == 0o700


def test_slot_folder_is_created_private(db_url: str, tmp_path: Path) -> None:
    runtime = private_dir(tmp_path / "run")
    assert run_batchq(db_url, "run", XDG_RUNTIME_DIR=str(runtime)).returncode == 0
    (slot,) = slot_files(runtime / "batchq")
    for path in (slot.parent.parent, slot.parent):
        assert path.stat().st_mode & 0o777 == 0o700, path
    assert slot.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("existing_target", [True, False])
def test_symlink_planted_as_slot_file_is_refused(db_url: str, tmp_path: Path, existing_target: bool) -> None:
    runtime = private_dir(tmp_path / "run")
    assert run_batchq(db_url, "run", XDG_RUNTIME_DIR=str(runtime)).returncode == 0
    (slot,) = slot_files(runtime / "batchq")
    target = tmp_path / "victim"
    if existing_target:
        target.write_text("keep")
    slot.unlink()
    slot.symlink_to(target)
    result = run_batchq(db_url, "run", XDG_RUNTIME_DIR=str(runtime))
    assert_one_line_error(result, str(slot), "symlink")
    if existing_target:
        assert target.read_text() == "keep"
    else:
        assert not target.exists()  # batchq never creates a file where a planted link points


def squat_tmpdir(tmp_path: Path) -> Path:
    """What another local user can do in a world-writable /tmp: make this user's folder first."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    tmpdir.chmod(0o1777)
    squatted = tmpdir / f"batchq-{os.getuid()}"
    squatted.mkdir(mode=0o700)
    os.chown(squatted, 65534, 65534)
    return tmpdir


@pytest.mark.parametrize("where", ["runtime folder", "home"])
def test_slot_folder_squatted_in_tmpdir_stops_no_worker(
    queue: Queue, db_url: str, tmp_path: Path, where: str
) -> None:
    """Another user made $TMPDIR/batchq-<uid> first: once every `run --max-procs-per-host` failed
    on it. The slots are in the user's own runtime folder, or under the home when there is none."""
    tmpdir = squat_tmpdir(tmp_path)
    if where == "runtime folder":
        base = private_dir(tmp_path / "run")
        env = {"XDG_RUNTIME_DIR": str(base)}
        folder = base / "batchq"
    else:
        home = private_dir(tmp_path / "home")
        env = {"XDG_RUNTIME_DIR": "", "XDG_STATE_HOME": "", "HOME": str(home)}
        folder = home / ".local" / "state" / f"batchq-slots-{socket.gethostname()}"
    queue.enqueue("jobs:noop")
    result = run_batchq(db_url, "run", "--max-procs-per-host", "2", TMPDIR=str(tmpdir), **env)
    assert (result.returncode, result.stderr) == (0, "")
    assert job_rows(queue) == []
    assert len(slot_files(folder)) == 1
    assert folder.stat().st_mode & 0o777 == 0o700


def test_slot_folder_in_a_runtime_folder_others_can_write_is_not_used(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    """XDG_RUNTIME_DIR naming a shared folder (as /tmp) is passed over for the home."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    home = private_dir(tmp_path / "home")
    queue.enqueue("jobs:noop")
    result = run_batchq(db_url, "run", XDG_RUNTIME_DIR=str(shared), XDG_STATE_HOME="", HOME=str(home))
    assert (result.returncode, result.stderr) == (0, "")
    assert list(shared.iterdir()) == []
    assert len(slot_files(home / ".local" / "state" / f"batchq-slots-{socket.gethostname()}")) == 1


# -- item 3: passwords with special characters -------------------------------------------

PASSWORDS = ["a", "p/ss", "p#ss", "p?ss", "p@ss", "1234/SECRET", "p@ss/w?rd#x:y"]


@pytest.mark.parametrize("password", PASSWORDS)
def test_unreachable_server_message_hides_the_password(server_name: str, password: str) -> None:
    result = invoke_batchq(f"{server_name}://app:{password}@{UNREACHABLE[server_name]}/db", "stats")
    assert_one_line_error(result, f"cannot reach {server_name}://app:***@{UNREACHABLE[server_name]}/db: ")
    assert "refused" in result.stderr  # the driver's own words, not garbled by masking
    if len(password) > 1:
        assert password not in result.stderr + result.stdout
    assert "***" not in result.stderr.split("/db: ", 1)[1]  # the driver's message is not masked


@dataclass
class PasswordUser:
    """A server with a user that logs in with a password, as every real server has."""

    host_port: str
    user: str
    password: str


@pytest.fixture(scope="module")
def postgresql_with_passwords() -> Iterator[PrivatePostgreSQL]:
    """A private PostgreSQL server that asks every user but postgres for a password (the shared
    one trusts every local login, so it never answers 28P01)."""
    server = PrivatePostgreSQL()
    hba = server.datadir / "pg_hba.conf"
    rules = "host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
    hba.write_text(rules + hba.read_text())
    server.start()
    try:
        yield server
    finally:
        server.stop()
        server.remove()


@pytest.fixture
def password_user(server_name: str, request: pytest.FixtureRequest) -> Iterator[PasswordUser]:
    """A user with a password on a server (a private name, dropped after the test). On MariaDB
    its mere presence at the host turns an unknown user's refusal from 1045 into 1698."""
    name, password = f"batchq_pw_{secrets.token_hex(4)}", secrets.token_hex(8)
    if server_name == "mysql":
        url = parse_url(SERVER_URLS["mysql"])
        conn = autocommit_connection(SERVER_URLS["mysql"])
        with conn.cursor() as cur:
            cur.execute("CREATE USER %s@%s IDENTIFIED BY %s", (name, url.host, password))
        try:
            yield PasswordUser(f"{url.host}:{url.port or 3306}", name, password)
        finally:
            with conn.cursor() as cur:
                cur.execute("DROP USER %s@%s", (name, url.host))
            conn.close()
        return
    server: PrivatePostgreSQL = request.getfixturevalue("postgresql_with_passwords")
    with psycopg.connect(host="127.0.0.1", port=server.port, user="postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(name), password))
    yield PasswordUser(f"127.0.0.1:{server.port}", name, password)


@pytest.mark.parametrize("password", ["a", "p/ss", "1234/SECRET", "p@ss#x?y"])
@pytest.mark.parametrize("who", ["unknown user", "wrong password"])
def test_refused_login_message_hides_the_password(
    server_name: str, password_user: PasswordUser, password: str, who: str
) -> None:
    """A real server refusing a login: the message names the URL, masked, and nothing else.
    The server has a password user, as real ones do: MariaDB then refuses an unknown user with
    1698, not 1045, and PostgreSQL a wrong password with 28P01, not 28000: alike for batchq."""
    user = "nosuchuser" if who == "unknown user" else password_user.user
    where = f"{password_user.host_port}/no_such_db_input"
    result = invoke_batchq(f"{server_name}://{user}:{password}@{where}", "stats")
    assert_one_line_error(result, f"batchq: error: cannot use {server_name}://{user}:***@{where}: ")
    if len(password) > 1:
        assert password not in result.stderr + result.stdout
    assert "***" not in result.stderr.split("_input: ", 1)[1]


@pytest.mark.parametrize(
    "url, secret",
    [
        ("mysql://app:pa@zz9", "zz9"),
        ("mysql://app:s3cr?t@db.example", "s3cr"),
        ("postgresql://app:1234/SECRET@", "SECRET"),
        ("mysql://app:hunter2@db.example:33o6/jobs", "hunter2"),
        ("mysql://app:pw@db/jobs?sslrootcert=/certs@x/ca.pem", "pw@db"),
    ],
)
def test_malformed_url_is_refused_without_the_password(url: str, secret: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_url(url)
    message = str(info.value)
    assert secret not in message
    assert "percent-encode special characters in the password" in message
    assert_one_line_error(invoke_batchq(url, "stats"), "percent-encode", status=2)


# -- item 12: one line (exit 2 for a bad URL, 1 for one that cannot be used), never a traceback


@pytest.mark.parametrize(
    "url, needle, status",
    [
        ("sqlite:////etc/passwd/x.db", "/etc/passwd", 1),  # a good URL that cannot be opened
        ("mysql://root@127.0.0.1:3306/x?connect_timeout=abc", "connect_timeout", 2),
        ("postgresql://postgres@127.0.0.1:5432/x?connect_timeout=abc", "connect_timeout", 2),
        ("mysql://root@127.0.0.1:3306/x?connect_timeout=-1", "connect_timeout", 2),
        ("mysql://root@127.0.0.1:3306/x?connect_timeout=0", "connect_timeout", 2),
        ("mysql://root@127.0.0.1:3306/x?sslmod=require", "sslmod", 2),
        ("mysql://root@a..b/db", "a..b", 2),
        ("postgresql://postgres@a..b/db", "a..b", 2),
        ("postgresql://postgres@127.0.0.1:5432/x?password=pw", "", 1),  # no database x
    ],
)
@pytest.mark.parametrize("command", ["stats", "run", "init-db"])
def test_bad_urls_are_one_line_errors(url: str, needle: str, status: int, command: str) -> None:
    result = invoke_batchq(url, command)  # refused before connecting: run starts no worker
    assert_one_line_error(result, needle, status=status)
    assert "=pw" not in result.stderr


def test_sqlite_under_a_file_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    assert_one_line_error(invoke_batchq(f"sqlite:///{tmp_path}/file/x.db", "init-db"), "not a directory")


def test_deeply_nested_payload_is_a_payload_error(queue: Queue, db_url: str) -> None:
    with pytest.raises(PayloadError, match="nested"):
        queue.enqueue("jobs:noop", nested(NESTED_DEPTH))
    mq = MessageQueue(db_url)
    try:
        mq.create_queue("deep")
        with pytest.raises(PayloadError, match="nested"):
            mq.send("deep", nested(NESTED_DEPTH))
    finally:
        mq.close()
    assert job_rows(queue) == []
    result = invoke_batchq(db_url, "enqueue", "jobs:noop", json.dumps(nested(31)))
    assert result.returncode == 0, result.stderr  # batchq's limit, on every backend (issue 23)
    result = invoke_batchq(db_url, "enqueue", "jobs:noop", json.dumps(nested(100)))
    assert_one_line_error(result, "nested more than 31 levels", status=2)
    deep = "[" * NESTED_DEPTH + "]" * NESTED_DEPTH
    result = invoke_batchq(db_url, "enqueue", "jobs:noop", deep)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "nested" in result.stderr


def test_cancel_of_an_impossible_id(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:noop")
    result = invoke_batchq(db_url, "cancel", "99999999999999999999999")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "not cancelled" in result.stderr and result.stderr.count("\n") == 1
    assert queue.cancel(10**23) is False
    assert queue.cancel(2**63) is False
    assert len(job_rows(queue)) == 1


def test_hook_that_raises_after_the_action(queue: Queue, db_url: str) -> None:
    job_id = queue.enqueue("jobs:fail", "x", max_errors=1)
    assert run_batchq(db_url, "run").returncode == 0
    result = invoke_batchq(db_url, "gc-error", "--requeue", "--hook", "input_hooks:explode")
    assert result.returncode == 3, result.stderr
    assert f"#{job_id} default jobs:fail" in result.stdout  # the report still printed
    assert_one_line_error(result, "input_hooks:explode", "dashboard unreachable for 1 jobs", status=3)
    assert "second line" not in result.stderr
    assert job_rows(queue)[0]["status"] == "ready"  # the action committed


def test_huge_delay_is_a_config_error(queue: Queue, db_url: str) -> None:
    for delay in (10**20, 1e300, "99999999999d", timedelta(days=999_999_999), 101 * 366 * 86400):
        with pytest.raises(ConfigError, match="at most"):
            queue.enqueue("jobs:noop", delay=delay)
    queue.enqueue("jobs:noop", delay=99 * 365 * 86400)  # within the limit: stored
    mq = MessageQueue(db_url)
    try:
        mq.create_queue("later")
        with pytest.raises(ConfigError, match="at most"):
            mq.send("later", 1, delay=10**20)
        with pytest.raises(ConfigError, match="at most"):
            mq.read("later", vt=10**20)
    finally:
        mq.close()
    result = invoke_batchq(db_url, "enqueue", "jobs:noop", "--delay", "99999999999999999999")
    assert result.returncode == 2 and "Traceback" not in result.stderr and "at most" in result.stderr
    assert len(job_rows(queue)) == 1


def test_cli_refuses_a_queue_name_with_a_newline(db_url: str) -> None:
    assert_one_line_error(invoke_batchq(db_url, "run", "--queue", "default\n"), "bad queue name", status=2)
    assert_one_line_error(
        invoke_batchq(db_url, "enqueue", "jobs:noop", "--queue", "default\n"), "bad queue name", status=2
    )


# -- item 15: gc-error --requeue, purge under cron, --url and -v after the subcommand ---------


def test_gc_error_requeue_reports_the_reset_count(queue: Queue, db_url: str) -> None:
    first = queue.enqueue("jobs:fail", "x", max_errors=2)
    second = queue.enqueue("jobs:fail", "y", max_errors=2)
    for _ in range(2):
        assert run_batchq(db_url, "run", "--backoff", "0").returncode == 0
    assert [row["error_count"] for row in job_rows(queue)] == [2, 2]
    listed = invoke_batchq(db_url, "gc-error", "--requeue", "--json", "--id", str(first))
    assert listed.returncode == 3
    (job,) = json.loads(listed.stdout)
    assert (job["id"], job["status"], job["error_count"], job["error_count_before"]) == (first, "ready", 0, 2)
    text = invoke_batchq(db_url, "gc-error", "--requeue", "--id", str(second))
    assert text.returncode == 3
    assert f"#{second} default jobs:fail (2 errors, reset to 0)" in text.stdout
    assert [row["error_count"] for row in job_rows(queue)] == [0, 0]


def test_purge_without_a_terminal_needs_yes(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:noop")
    result = subprocess.run(
        batchq_cmd("purge", "default"),
        env=batchq_env(db_url),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_one_line_error(result, "--yes", status=2)
    assert "Aborted" not in result.stderr + result.stdout
    assert len(job_rows(queue)) == 1
    assert invoke_batchq(db_url, "purge", "default", "--yes").stdout == "deleted 1 job\n"


SUBCOMMANDS = [
    ["init-db"],
    ["run"],
    ["gc-processing"],
    ["gc-error"],
    ["stats"],
    ["enqueue", "jobs:noop"],
    ["cancel", "1"],
    ["pause", "q"],
    ["resume", "q"],
    ["purge", "q", "--yes"],
]


@pytest.mark.parametrize("args", SUBCOMMANDS, ids=lambda args: args[0])
def test_url_and_verbose_after_the_subcommand(db_url: str, args: list[str]) -> None:
    """Accepted on every subcommand, as rq does; the subcommand's value wins over the group's."""
    result = invoke_batchq(db_url, *args, "-v", "--url", "nosuch://x")
    assert_one_line_error(result, "bad database URL", status=2)
    batchq = run_batchq if args[0] == "run" else invoke_batchq  # a worker runs in a process of its own
    result = batchq("nosuch://x", "--url", "nosuch://y", *args, "--url", db_url, "-v")
    assert result.returncode in (0, 1, 3) and "bad database URL" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_verbose_after_run(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:noop")
    result = run_batchq(db_url, "run", "-v")
    assert result.returncode == 0 and "processed 1 job (1 ok, 0 errors)" in result.stderr
    assert run_batchq(db_url, "run").stderr == ""
