"""Hand-edited links and forms: every query parameter of every dashboard page, and the fields
of its actions, given hostile values (NUL, bad UTF-8, huge text, integers beyond 64 bits) on
every backend: a 400 naming the parameter, or the page as usual, never a 500.

One dashboard per backend serves the whole module (starting one per case would take minutes)."""

from __future__ import annotations

import html
import http.client
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from batchq import MessageQueue, Queue
from tests.support.dashboard import Dashboard, Reply, dashboard
from tests.support.db import SERVER_URLS, prepare_database

HOSTILE = {  # as a link carries it, percent-encoded
    "nul": "a%00b",
    "bad-utf8": "%FF%FE",
    "utf8-surrogate": "%ED%A0%80",
    "huge": "x" * 5000,
    "int-beyond-64-bits": "9" * 30,
    "int64-max-plus-1": str(2**63),
    "int64-min-minus-1": str(-(2**63) - 1),
    "emoji": "%F0%9F%98%80",
}
REFUSED_EVERYWHERE = {"nul", "bad-utf8", "utf8-surrogate", "huge"}
INTEGERS = {"after_id", "after_priority", "after", "id"}
FIRST_PAGE = {"queue": "default", "state": "ready", "task": "jobs:noop"}
# A valid next-page link of /jobs: each case replaces one of its parameters.
NEXT_PAGE = {
    **FIRST_PAGE,
    "after_state": "ready",
    "after_priority": "0",
    "after_run_at": "2026-01-01 00:00:00",
    "after_id": "1",
}
SEARCH = {"state": "failed", "queue": "default", "task": "jobs:noop", "text": "50% o'_\"x"}
PAGES: dict[str, tuple[str, dict[str, str], tuple[str, ...]]] = {  # name: path, link, parameters
    "queues": ("/", {}, ("note", "sig", "other")),
    "jobs": ("/jobs", FIRST_PAGE, (*FIRST_PAGE, "note")),
    "jobs-next-page": ("/jobs", NEXT_PAGE, tuple(NEXT_PAGE)),
    "job": ("/jobs/{job}", {}, ("note", "sig")),
    **{name: (f"/{name}", {}, ("note",)) for name in ("failures", "workers", "schedules", "locks")},
    "search": ("/search", SEARCH, (*SEARCH, "id", "note")),
    "metrics": ("/metrics", {}, ("note",)),
    "charts": ("/charts", {"range": "24h"}, ("range", "note")),
    "login": ("/login", {}, ("note",)),
    "mq": ("/mq", {}, ("note", "sig")),
    "mq-queue": ("/mq/queue", {"queue": "mail", "after": "0"}, ("queue", "after", "note")),
    "mq-message": ("/mq/message", {"queue": "mail", "id": "{msg}"}, ("queue", "id", "note")),
}
CASES = [(page, param) for page, (_, _, params) in PAGES.items() for param in params]


@dataclass(frozen=True)
class Served:
    board: Dashboard
    job: int  # a job the database holds
    msg: int  # a message of message queue "mail"
    csrf: str  # the board's client is signed in


class Boards:
    """One dashboard per backend, started on first use, over a few jobs."""

    def __init__(self, stack: ExitStack, folder: Path) -> None:
        self.stack, self.folder = stack, folder
        self.running: dict[str, Served] = {}

    def get(self, backend_name: str) -> Served:
        if backend_name not in self.running:
            self.running[backend_name] = self._start(backend_name)
        return self.running[backend_name]

    def _start(self, backend_name: str) -> Served:
        sqlite = f"sqlite:///{self.folder / 'batchq.db'}"
        url = sqlite if backend_name == "sqlite" else SERVER_URLS[backend_name]
        prepare_database(backend_name, url)
        queue = Queue(url, task_modules=["jobs"])
        messages = MessageQueue(url)
        try:
            job = [queue.enqueue("jobs:noop", n) for n in range(5)][0]
            messages.create_queue("mail")
            msg = messages.send("mail", {"n": 1})
        finally:
            queue.close()
            messages.close()
        board = self.stack.enter_context(dashboard(url))
        return Served(board, job, msg, board.sign_in())


@pytest.fixture(scope="module")
def boards(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Boards]:
    with ExitStack() as stack:
        yield Boards(stack, tmp_path_factory.mktemp("dashboard-input"))


@pytest.mark.parametrize("value_name", list(HOSTILE))
@pytest.mark.parametrize(("page", "param"), CASES, ids=[f"{page}-{param}" for page, param in CASES])
def test_a_hostile_query_parameter_is_a_400_never_a_500(
    boards: Boards, backend_name: str, page: str, param: str, value_name: str
) -> None:
    served = boards.get(backend_name)
    route, link, _ = PAGES[page]
    given = {key: value.format(msg=served.msg) for key, value in link.items() if key != param}
    query = urllib.parse.urlencode(given)
    path = f"{route.format(job=served.job)}?{query}{'&' if query else ''}{param}={HOSTILE[value_name]}"
    reply = served.board.get(path)
    assert "Traceback" not in reply.body and reply.status != 500, (path[:200], reply.body[:2000])
    must_refuse = value_name in REFUSED_EVERYWHERE or (param in INTEGERS and value_name.startswith("int"))
    if must_refuse:
        assert reply.status == 400, (path[:200], reply.status, reply.body[:2000])
        said = html.unescape(reply.body)
        assert f"bad query parameter {param!r}" in said or f"bad {param} " in said, said
    else:  # a message-queue page of a queue or message that is not there: 404
        allowed = (200, 400, 404) if page.startswith("mq-") else (200, 400)
        assert reply.status in allowed, (path[:200], reply.status, reply.body[:2000])


@pytest.mark.parametrize("value_name", list(HOSTILE))
@pytest.mark.parametrize(
    ("action", "field"),
    [
        ("/actions/cancel", "id"),
        ("/actions/retry", "id"),
        ("/actions/retry", "state"),
        ("/actions/delete", "id"),
        ("/actions/pause", "queue"),
        ("/actions/stop-worker", "name"),
        ("/login", "token"),
        ("/actions/mq-archive", "id"),
        ("/actions/mq-delete", "id"),
        ("/actions/mq-purge", "up_to"),
        ("/actions/mq-delete", "queue"),
    ],
)
def test_a_hostile_form_field_is_a_400_never_a_500(
    boards: Boards, backend_name: str, action: str, field: str, value_name: str
) -> None:
    served = boards.get(backend_name)
    other = "&queue=mail" if action.startswith("/actions/mq-") and field != "queue" else ""
    reply = post_raw(served.board, action, f"csrf={served.csrf}&{field}={HOSTILE[value_name]}{other}")
    assert "Traceback" not in reply.body and reply.status != 500, (action, value_name, reply.body[:2000])
    integer = field in ("id", "up_to")
    if value_name in REFUSED_EVERYWHERE or (integer and value_name.startswith("int")):
        assert reply.status == 400, (action, value_name, reply.status, reply.body[:2000])


@pytest.mark.parametrize("segment", ["9" * 30, str(2**63), "-1", "0", "%00", "%FF", "1%00"])
def test_a_hostile_job_id_in_the_path_is_a_404(boards: Boards, backend_name: str, segment: str) -> None:
    reply = boards.get(backend_name).board.get(f"/jobs/{segment}")
    assert reply.status == 404, (segment, reply.status, reply.body[:2000])


def post_raw(board: Dashboard, path: str, body: str) -> Reply:
    """A form POST whose body is sent as written (urlencode would re-encode its bytes)."""
    conn = http.client.HTTPConnection(board.address, board.port, timeout=30)
    cookie = "; ".join(f"{k}={v}" for k, v in board.cookies.items())
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie}
    try:
        conn.request("POST", path, body=body.encode("latin-1"), headers=headers)
        response = conn.getresponse()
        return Reply(response.status, dict(response.getheaders()), response.read().decode())
    finally:
        conn.close()
