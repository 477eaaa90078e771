"""`batchq dashboard` as a real subprocess, spoken to over HTTP (urllib) or from headless Chromium
(Debian's chromium and chromium-driver, through Selenium; scripts/ensure-browser installs them)."""

from __future__ import annotations

import http.client
import re
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.processes import spawn_batchq
from tests.support.servers import free_port

TOKEN = "dashboard-test-token"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: str


@dataclass
class Dashboard:
    """A running `batchq dashboard`: its base URL, and an HTTP client with a cookie jar."""

    proc: subprocess.Popen[str]
    port: int
    cookies: dict[str, str] = field(default_factory=dict)
    address: str = "127.0.0.1"  # where the client connects

    @property
    def base(self) -> str:
        return f"http://{f'[{self.address}]' if ':' in self.address else self.address}:{self.port}"

    def request(self, method: str, path: str, form: dict[str, str] | None = None, **headers: str) -> Reply:
        """Headers by keyword (Host="attacker.example" replaces the one http.client sends)."""
        conn = http.client.HTTPConnection(self.address, self.port, timeout=30)
        body = urllib.parse.urlencode(form) if form is not None else None
        sent = dict(headers)
        if form is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        try:
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            reply = Reply(response.status, dict(response.getheaders()), response.read().decode())
        finally:
            conn.close()
        for cookie in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = cookie.partition("=")
            value = rest.split(";", 1)[0]
            if value:
                self.cookies[name] = value
            else:
                self.cookies.pop(name, None)
        return reply

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def post(self, path: str, form: dict[str, str], **headers: str) -> Reply:
        return self.request("POST", path, form, **headers)

    def sign_in(self, token: str = TOKEN) -> str:
        """Sign in; returns the CSRF token the pages now carry."""
        reply = self.post("/login", {"token": token})
        assert reply.status == 303, reply.body
        return csrf_of(self.get("/").body)


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert match, "no CSRF token on the page"
    return match.group(1)


@contextmanager
def dashboard(
    url: str, *args: str, token: str | None = TOKEN, address: str = "127.0.0.1", **env: str
) -> Iterator[Dashboard]:
    """`batchq dashboard --port <free port> ARGS`, up and answering at ``address``; stopped
    afterwards."""
    port = free_port()
    if token is not None:
        env["BATCHQ_DASHBOARD_TOKEN"] = token
    proc = spawn_batchq(url, "dashboard", "--port", str(port), *args, **env)  # stopped below
    board = Dashboard(proc, port, address=address)
    try:
        _wait_until_up(board)
        yield board
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def _wait_until_up(board: Dashboard, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if board.proc.poll() is not None:
            _, err = board.proc.communicate()
            raise AssertionError(f"batchq dashboard exited {board.proc.returncode}: {err}")
        try:
            board.get("/metrics")
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"batchq dashboard did not answer on port {board.port} in {timeout}s")


def chromium(*arguments: str) -> Any:
    """Headless Chromium driven by Debian's chromedriver, started with ``arguments`` besides.
    Missing either is a failure, never a skip: scripts/ensure-browser installs them."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        assert Path(path).exists(), f"{path} is missing: run scripts/ensure-browser"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,800",
        *arguments,
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    return driver
