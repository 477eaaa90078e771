"""`batchq dashboard` answers only the Host headers it was started for (DNS rebinding): a page
on attacker.example re-pointed at 127.0.0.1 must not read a job's payload, /metrics, /workers
or /locks. Real subprocesses over HTTP with a Host header of the test's choosing; the browser
test (test_dashboard_browser.py) does the same from Chromium with a re-pointed name."""

from __future__ import annotations

import socket

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.dashboard import TOKEN, Dashboard, dashboard
from tests.support.processes import assert_one_line_error

SECRET = "payload-of-job-7"
READ_PAGES = (
    "/jobs/{job}",
    "/metrics",
    "/workers",
    "/locks",
    "/",
    "/jobs?queue=default",
    "/failures",
    "/search?state=ready&text=noop",
)


def seed(queue: Queue) -> int:
    queue.lock("reindex", ttl=600).acquire()
    return queue.enqueue("jobs:noop", {"secret": SECRET})


def assert_refused(board: Dashboard, job: int, host: str, status: int = 421) -> None:
    for page in (*READ_PAGES, "/schedules", "/login", "/no-such-page"):
        reply = board.request("GET", page.format(job=job), Host=host)
        assert reply.status == status, (page, host, reply.status, reply.body)
        for shown in (SECRET, "reindex", "batchq_jobs", "<html"):  # nothing of the dashboard's
            assert shown not in reply.body, (page, host, reply.body)
    login = board.request("POST", "/login", {"token": TOKEN}, Host=host)
    assert login.status == status and "Set-Cookie" not in login.headers


def assert_answered(board: Dashboard, job: int, host: str) -> None:
    reply = board.request("GET", f"/jobs/{job}", Host=host)
    assert reply.status == 200 and SECRET in reply.body, (host, reply.status, reply.body)


def test_a_foreign_host_reads_nothing(queue: Queue, db_url: str) -> None:
    job = seed(queue)
    with dashboard(db_url) as board:
        port = board.port
        for host in (f"127.0.0.1:{port}", "127.0.0.1", f"localhost:{port}", "LocalHost", "localhost.:80"):
            assert_answered(board, job, host)
        for host in (
            f"attacker.example:{port}",
            "ATTACKER.example.",
            "localhost.attacker.example",
            "127.0.0.1.attacker.example",
            f"[::1]:{port}",  # not the address it listens on
            "10.0.0.1",
        ):
            assert_refused(board, job, host)
        refused = board.request("GET", f"/jobs/{job}", Host=f"attacker.example:{port}")
        assert "does not answer to the host 'attacker.example'" in refused.body
        assert "--allowed-host attacker.example" in refused.body
        for host in ("[::1", "local host", f"localhost:{port}0000", "localhost:x", "a:1:2"):
            assert_refused(board, job, host, status=400)
        assert SECRET in http10_get(board, f"/jobs/{job}")  # no Host header: no browser


def http10_get(board: Dashboard, path: str) -> str:
    """An HTTP/1.0 request with no Host header, as old tools send it."""
    with socket.create_connection((board.address, board.port), timeout=30) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.decode().partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 200") or head.startswith("HTTP/1.0 200"), head
    return body


def test_an_allowed_host_is_answered(queue: Queue, db_url: str) -> None:
    job = seed(queue)
    with dashboard(db_url, "--allowed-host", "Dash.Example.com.", "--allowed-host", "[::2]") as board:
        for host in ("dash.example.com", "DASH.example.com.:443", "[0::2]:8080", "127.0.0.1"):
            assert_answered(board, job, host)
        for host in ("evil.example", "example.com", "x.dash.example.com"):
            assert_refused(board, job, host)
        csrf = board.sign_in()  # the Origin of a POST from the allowed name is this site
        reply = board.post(
            "/actions/pause",
            {"queue": "mail", "csrf": csrf},
            Host="dash.example.com",
            Origin="http://dash.example.com",
        )
        assert reply.status == 303, reply.body


# Options refused before connecting: one backend tells all. The URL names no file, so that a
# check that let the value through would end with exit 1 ("batchq init-db"), never serve.
NO_DATABASE = "sqlite:////nonexistent/batchq.db"


@pytest.mark.parametrize("value", ["http://dash.example.com", "dash.example.com:443", "", "a/b", "*"])
def test_a_bad_allowed_host_is_one_error_line(value: str) -> None:
    result = invoke_batchq(NO_DATABASE, "dashboard", "--allowed-host", value)
    assert_one_line_error(result, "bad --allowed-host", "--allowed-host dashboard.example.com", status=2)


def test_an_ipv6_listener_answers_its_literal(queue: Queue, db_url: str) -> None:
    job = seed(queue)
    with dashboard(db_url, "--host", "::1", address="::1") as board:
        for host in (f"[::1]:{board.port}", "[0:0:0:0:0:0:0:1]", "localhost"):
            assert_answered(board, job, host)
        for host in ("127.0.0.1", "[::2]", "attacker.example"):
            assert_refused(board, job, host)


def test_listening_on_every_address_answers_ip_literals_and_allowed_names(queue: Queue, db_url: str) -> None:
    job = seed(queue)
    args = ("--host", "0.0.0.0", "--allowed-host", "dash.example.com")
    with dashboard(db_url, *args) as board:
        # Any IP literal: a browser sends one only for a URL written with it, with no DNS answer
        # an attacker could re-point.
        for host in (f"127.0.0.1:{board.port}", "192.0.2.7", "[::1]", "localhost", "dash.example.com"):
            assert_answered(board, job, host)
        for host in ("attacker.example", socket.gethostname() + ".attacker.example"):
            assert_refused(board, job, host)


@pytest.mark.parametrize("host", ["999.1.1.1", "no-such-host.invalid"])
def test_a_host_that_does_not_resolve_is_one_error_line(host: str) -> None:
    result = invoke_batchq(NO_DATABASE, "dashboard", "--host", host, "--port", "8080")
    assert_one_line_error(result, f"cannot listen on {host}:8080", "--host takes an IP address")
