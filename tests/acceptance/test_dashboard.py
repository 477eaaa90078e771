"""`batchq dashboard` over HTTP, on every backend: what each page shows, what an action needs
(the token, a signed-in session, its CSRF token, a POST from the dashboard's own pages), what
read-only mode refuses, payloads never unpickled, /metrics as `batchq metrics` prints it, and
paging through a queue. The browser tests (test_dashboard_browser.py) click through the same
pages in Chromium; here every refusal and edge is checked cheaply."""

from __future__ import annotations

import html
import re
import socket
import subprocess
import sys
import urllib.parse
from pathlib import Path

from batchq import Queue
from batchq.coordination.locks import list_locks
from batchq.ops.registry import list_workers
from batchq.runtime.sweeps import failure_groups
from batchq.runtime.worker import RunOptions, Worker
from tests.support.cli import invoke_batchq
from tests.support.dashboard import TOKEN, Dashboard, dashboard
from tests.support.db import job_rows, sql
from tests.support.processes import assert_one_line_error, batchq_env, start_batchq, wait_for
from tests.support.rows import dead_worker, processing, write_row


def run_all(queue: Queue) -> None:
    Worker(queue, RunOptions(backoff_base=0)).run()


def paused(queue: Queue, name: str) -> bool:
    return name in queue.paused_queues()


def test_each_page_shows_what_the_tables_hold(queue: Queue, db_url: str) -> None:
    ready = queue.enqueue("jobs:noop", {"to": "ann"}, queue="mail")
    queue.enqueue("jobs:noop", queue="mail", delay=3600)
    queue.enqueue("jobs:fail", "order 7", max_errors=1)
    run_all(queue)
    worker = dead_worker()
    running = write_row(queue, **processing(queue, worker, task="jobs:slow"))
    sql(queue, f"UPDATE batchq_job SET queue = 'reports' WHERE id = {running}")
    queue.schedule("nightly", "0 3 * * *", "jobs:noop")
    queue.lock("reindex", ttl=600).acquire()
    [group] = failure_groups(queue)
    with dashboard(db_url) as board:
        queues = board.get("/").body
        assert re.search(r'data-queue="mail">.*?<td class="n">1</td><td class="n">1</td>', queues, re.S)
        assert 'href="/jobs?queue=reports"' in queues
        jobs = board.get("/jobs?queue=mail").body
        assert f'href="/jobs/{ready}"' in jobs and "scheduled" in jobs
        job = board.get(f"/jobs/{ready}").body
        assert "&#34;to&#34;: &#34;ann&#34;" in job and "waiting" in job
        failures = board.get("/failures").body
        assert group.fingerprint in failures and "ValueError: boom: &#39;order 7&#39;" in failures
        workers = board.get("/workers").body
        assert html.escape(worker) in workers and "gc-processing puts its jobs back" in workers
        assert f'href="/jobs/{running}"' in board.get("/jobs?queue=reports&state=processing").body
        assert "nightly" in board.get("/schedules").body and "0 3 * * *" in board.get("/schedules").body
        assert "reindex" in board.get("/locks").body
        assert board.get(f"/jobs/{ready + 1000}").status == 404


def test_an_action_needs_the_token_a_session_and_its_csrf_token(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:noop", queue="mail")
    with dashboard(db_url) as board:
        form = {"queue": "mail"}
        assert board.post("/actions/pause", form).status == 403  # not signed in
        assert board.post("/login", {"token": "wrong"}).status == 403
        assert board.post("/actions/pause", form).status == 403
        csrf = board.sign_in()
        assert board.post("/actions/pause", form).status == 403  # no CSRF token
        assert board.post("/actions/pause", {**form, "csrf": "0" * 64}).status == 403
        other = Dashboard(board.proc, board.port)  # another browser: its own session and token
        other.sign_in()
        assert other.post("/actions/pause", {**form, "csrf": csrf}).status == 403
        evil = board.post("/actions/pause", {**form, "csrf": csrf}, Origin="http://evil.example")
        assert evil.status == 403 and "another site" in evil.body
        assert board.get("/actions/pause?queue=mail").status == 405  # POST only
        assert not paused(queue, "mail")
        done = board.post("/actions/pause", {**form, "csrf": csrf, "back": "/?note=old&sig=x"})
        assert done.status == 303 and done.headers["Location"].startswith("/?note=paused+queue+mail&sig=")
        assert paused(queue, "mail")
        assert "paused queue mail" in board.get(done.headers["Location"]).body
        # A note only this process signed is shown: a crafted link cannot speak for the dashboard.
        assert 'id="note"' not in board.get("/?note=Your+token+expired:+sign+in+at+evil.example").body
        assert 'id="note"' not in board.get(done.headers["Location"].replace("paused", "resumed")).body
        for back in ("https://evil.example/", "//evil.example/", "/\\evil.example/"):  # never elsewhere
            reply = board.post("/actions/resume", {**form, "csrf": csrf, "back": back})
            assert reply.headers["Location"].startswith("/?note=resumed+queue+mail&sig=")
        assert not paused(queue, "mail")
        cookie = board.cookies["batchq_dashboard_session"]
        assert board.post("/logout", {"csrf": csrf}).status == 303
        assert "batchq_dashboard_session" not in board.cookies
    with dashboard(db_url) as restarted:  # a new process: the old session is void
        restarted.cookies["batchq_dashboard_session"] = cookie
        assert restarted.post("/actions/pause", {**form, "csrf": csrf}).status == 403
    assert not paused(queue, "mail")


def test_logging_out_ends_the_session_on_the_server(queue: Queue, db_url: str) -> None:
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        cookie = board.cookies["batchq_dashboard_session"]
        other = Dashboard(board.proc, board.port)  # another browser, still signed in
        other_csrf = other.sign_in()
        assert board.post("/logout", {"csrf": csrf}).status == 303
        board.cookies["batchq_dashboard_session"] = cookie  # a copy kept from before
        replayed = board.post("/actions/pause", {"queue": "mail", "csrf": csrf})
        assert replayed.status == 403 and "sign in" in replayed.body
        assert board.post("/logout", {"csrf": csrf}).status == 403
        assert not paused(queue, "mail")
        assert other.post("/actions/pause", {"queue": "mail", "csrf": other_csrf}).status == 303
        assert paused(queue, "mail")


def test_session_cookie_is_httponly_and_samesite_strict(db_url: str) -> None:
    with dashboard(db_url) as board:
        reply = board.post("/login", {"token": TOKEN})
        cookie = reply.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        page = board.get("/")
        assert "script-src 'nonce-" in page.headers["Content-Security-Policy"]
        assert page.headers["X-Content-Type-Options"] == "nosniff"


def test_without_a_token_or_with_read_only_no_action_is_offered_or_taken(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:fail", "x", max_errors=1)
    run_all(queue)
    for args, token, why in (
        ((), None, "no BATCHQ_DASHBOARD_TOKEN is set"),
        (("--read-only",), TOKEN, "--read-only"),
    ):
        with dashboard(db_url, *args, token=token) as board:
            page = board.get("/failures").body
            assert why in page and "<form" not in page.split("</header>")[1]
            assert board.post("/login", {"token": TOKEN}).status == 403
            board.cookies["batchq_dashboard_session"] = "forged.0000"
            [group] = failure_groups(queue)
            form = {"fingerprint": group.fingerprint, "csrf": "0" * 64}
            assert board.post("/actions/delete-group", form).status == 403
    assert [row["status"] for row in job_rows(queue)] == ["failed"]


def test_actions_change_the_database(queue: Queue, db_url: str) -> None:
    for n in range(3):
        queue.enqueue("jobs:fail", n, max_errors=1)
    queue.enqueue("jobs:return_false", max_errors=1)
    waiting = queue.enqueue("jobs:noop", queue="mail", delay=60)
    run_all(queue)
    big, small = failure_groups(queue)
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        board.post(
            "/actions/requeue-group", {"fingerprint": big.fingerprint, "queue": "default", "csrf": csrf}
        )
        statuses = {row["id"]: row["status"] for row in job_rows(queue)}
        assert sorted(statuses[i] for i in big.job_ids) == ["ready"] * 3
        form = {"fingerprint": small.fingerprint, "queue": "default", "csrf": csrf}
        reply = board.post("/actions/delete-group", form)
        assert "deleted+1+failed+job+of" in reply.headers["Location"]
        assert small.job_ids[0] not in {row["id"] for row in job_rows(queue)}
        assert (
            "cancelled+job"
            in board.post("/actions/cancel", {"id": str(waiting), "csrf": csrf}).headers["Location"]
        )
        assert waiting not in {row["id"] for row in job_rows(queue)}
        assert board.post("/actions/cancel", {"id": "x<b>", "csrf": csrf}).status == 400
        assert board.post("/actions/pause", {"queue": "no spaces", "csrf": csrf}).status == 400


def test_a_failure_group_is_shown_and_acted_on_per_queue(queue: Queue, db_url: str) -> None:
    """One cause in three queues is three rows: each row's delete says its queue and count and
    acts on that queue's jobs only; an action without its queue is refused, doing nothing."""
    ids = {name: [queue.enqueue("jobs:fail", n, queue=name, max_errors=1) for n in range(count)]
           for name, count in (("mail", 3), ("sms", 1), ("push", 1))}  # fmt: skip
    Worker(queue, RunOptions(backoff_base=0, queues=tuple(ids))).run()
    [group] = failure_groups(queue)
    fp = group.fingerprint
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        page = board.get("/failures").body
        assert len(re.findall(rf'<tr data-group="{fp}"', page)) == 3
        assert 'data-confirm="Delete the 3 failed jobs of this group in queue mail?"' in page
        assert 'data-confirm="Delete the 1 failed job of this group in queue sms?"' in page
        assert board.post("/actions/delete-group", {"fingerprint": fp, "csrf": csrf}).status == 400
        assert len(failed := [r for r in job_rows(queue) if r["status"] == "failed"]) == 5, failed
        reply = board.post("/actions/delete-group", {"fingerprint": fp, "queue": "mail", "csrf": csrf})
        assert f"deleted+3+failed+jobs+of+group+{fp}+in+queue+mail" in reply.headers["Location"]
        reply = board.post("/actions/requeue-group", {"fingerprint": fp, "queue": "sms", "csrf": csrf})
        assert f"requeued+1+job+of+failure+group+{fp}+in+queue+sms" in reply.headers["Location"]
    statuses = {row["id"]: row["status"] for row in job_rows(queue)}
    assert statuses == {ids["sms"][0]: "ready", ids["push"][0]: "failed"}


def test_a_failure_groups_action_leaves_alone_jobs_that_failed_after_the_page(
    queue: Queue, db_url: str
) -> None:
    """A row's buttons carry the group's latest failure as the page showed it: a job of the
    same cause and queue that fails after the page was drawn is not deleted with the row."""
    shown = queue.enqueue("jobs:fail", 1, queue="mail", max_errors=1)
    Worker(queue, RunOptions(backoff_base=0, queues=("mail",))).run()
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        page = board.get("/failures").body
        [failed_by] = set(re.findall(r'name="failed_by" value="([^"]+)"', page))
        later = queue.enqueue("jobs:fail", 2, queue="mail", max_errors=1)
        Worker(queue, RunOptions(backoff_base=0, queues=("mail",))).run()
        [group] = failure_groups(queue)
        form = {"fingerprint": group.fingerprint, "queue": "mail", "failed_by": failed_by, "csrf": csrf}
        reply = board.post("/actions/delete-group", form)
        assert f"deleted+1+failed+job+of+group+{group.fingerprint}+in+queue+mail" in reply.headers["Location"]
        bad = board.post("/actions/delete-group", {**form, "failed_by": "yesterday"})
        assert bad.status == 400
    assert [(row["id"], row["status"]) for row in job_rows(queue)] == [(later, "failed")]
    assert shown != later


def test_a_pickled_payload_is_shown_by_its_size_never_unpickled(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    marker = tmp_path / "unpickled"
    job_id = queue.enqueue("jobs:noop", Trap(str(marker)), serializer="pickle")  # signed: it verifies
    [(size,)] = sql(queue, f"SELECT LENGTH(payload) FROM batchq_job WHERE id = {job_id}")
    with dashboard(db_url) as board:  # BATCHQ_SECRET is set: the signature would verify
        page = board.get(f"/jobs/{job_id}").body
    assert f"signed pickle, {size} bytes: never unpickled here" in page
    assert not marker.exists()


class Trap:
    """A payload whose unpickling creates a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (Path.touch, (Path(self.path),))  # type: ignore[return-value]


def test_metrics_are_batchq_metrics(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:noop", queue="mail", delay=3600)
    queue.pause("mail")
    queue.lock("reindex").acquire()
    with dashboard(db_url) as board:
        reply = board.get("/metrics")
    printed = invoke_batchq(db_url, "metrics")
    assert printed.returncode == 0, printed.stderr
    assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert reply.body == printed.stdout  # nothing due, nothing running: no age ticks in between
    assert 'batchq_jobs{queue="mail",state="delayed"} 1.0' in reply.body
    assert list_locks(queue.database)[0].held


def test_paging_walks_every_job_once_in_claim_order(queue: Queue, db_url: str) -> None:
    ids = [queue.enqueue("jobs:noop", n, priority=n % 3) for n in range(60)]
    queue.enqueue_many("jobs:echo", list(range(45)), priority=1)
    ids += [int(n) for (n,) in sql(queue, "SELECT id FROM batchq_job WHERE task = 'jobs:echo' ORDER BY id")]
    ids += [queue.enqueue("jobs:noop", n, delay=3600) for n in range(10)]
    with dashboard(db_url) as board:
        seen = walk(board, "/jobs?queue=default")
        assert sorted(seen) == sorted(ids)
        order = "SELECT id FROM batchq_job WHERE status = 'ready' ORDER BY priority DESC, run_at, id"
        claim_order = [int(n) for (n,) in sql(queue, order)]
        assert seen[: len(claim_order)] == claim_order
        echo = walk(board, "/jobs?queue=default&state=ready&task=jobs:echo")
        assert sorted(echo) == sorted(ids[60:105])
        assert walk(board, "/jobs?queue=default&state=scheduled") == ids[105:]
        assert board.get("/jobs?queue=default&state=bogus").status == 400
        assert board.get("/jobs?queue=default&after_state=ready&after_priority=x&after_id=1").status == 400
        for run_at, priority in (("not a time", 0), ("2026-01-01", 2**40)):  # a link edited by hand
            link = {"queue": "default", "after_state": "ready", "after_priority": priority, "after_id": 1}
            odd = board.get("/jobs?" + urllib.parse.urlencode({**link, "after_run_at": run_at}))
            assert odd.status in (200, 400) and "Traceback" not in odd.body, odd.body


def walk(board: Dashboard, path: str) -> list[int]:
    """Every job id listed from ``path`` on, following next-page links (50 jobs a page)."""
    seen: list[int] = []
    while True:
        page = board.get(path)
        assert page.status == 200, page.body
        rows = [int(n) for n in re.findall(r'<td><a href="/jobs/(\d+)">', page.body)]
        seen += rows
        link = re.search(r'<a href="([^"]+)" id="next">', page.body)
        if link is None:
            return seen
        assert len(rows) == 50
        path = html.unescape(link.group(1))


def test_without_the_extra_it_says_how_to_install_it(db_url: str) -> None:
    hide_flask = "import sys; sys.modules['flask'] = None; from batchq.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-c", hide_flask, "dashboard"],
        env=batchq_env(db_url),
        capture_output=True,
        text=True,
    )
    assert_one_line_error(result, "the dashboard needs flask", "pip install 'batchq[dashboard]'", status=2)


def test_listening_beyond_this_host_without_a_token_warns(db_url: str) -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this host: the warning, then a one-line error.
    result = invoke_batchq(db_url, "dashboard", "--host", "192.0.2.1", "--port", "8080")
    warning, error = result.stderr.splitlines()
    assert warning.startswith("batchq: warning: the dashboard listens on 192.0.2.1")
    assert "no BATCHQ_DASHBOARD_TOKEN is set" in warning
    assert result.returncode == 1 and error.startswith("batchq: error: cannot listen on 192.0.2.1:8080")


def test_refresh_is_a_finite_number_of_seconds(tmp_path: Path) -> None:
    """nan passed FloatRange (it compares false both ways) and the dashboard served with it.
    Refused before connecting: one backend tells all. The URL names no file, so that a value
    let through would end with exit 1 ("batchq init-db"), never serve."""
    for refresh in ("nan", "NaN", "inf", "-1"):
        result = invoke_batchq(
            f"sqlite:///{tmp_path / 'none.db'}", "dashboard", "--port", "0", "--refresh", refresh
        )
        assert result.returncode == 2 and "invalid value for '--refresh'" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and "batchq dashboard on" not in result.stderr


def test_rows_written_by_hand_are_shown_as_stored(queue: Queue, db_url: str) -> None:
    bad_json = write_row(queue, payload=b'{"cut": ', task="jobs:noop")
    odd_serializer = write_row(queue, payload=b"\x00\xff", serializer="msgpack")
    no_payload = write_row(queue)
    odd_queue = write_row(queue)
    sql(queue, f"UPDATE batchq_job SET queue = 'odd \"name'' <b>', last_error = NULL WHERE id = {odd_queue}")
    with dashboard(db_url) as board:
        assert "not valid JSON, shown as text" in board.get(f"/jobs/{bad_json}").body
        assert "{&#34;cut&#34;: </pre>" in board.get(f"/jobs/{bad_json}").body
        assert "serializer &#39;msgpack&#39;, 2 bytes: not shown" in board.get(f"/jobs/{odd_serializer}").body
        assert '<p id="payload" class="muted">none</p>' in board.get(f"/jobs/{no_payload}").body
        queues = board.get("/").body
        link = re.search(r'<a href="(/jobs\?queue=[^"]+)">odd &#34;name&#39; &lt;b&gt;</a>', queues)
        assert link is not None, queues
        assert f'href="/jobs/{odd_queue}"' in board.get(html.unescape(link.group(1))).body


def test_workers_page_lists_the_registry_and_stops_a_worker(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    queue.enqueue("jobs:slow", {"started": str(started), "seconds": 1}, queue="mail")
    worker = start_batchq(db_url, "run", "--queue", "mail", "--wait", "120")
    try:
        wait_for(started.exists)
        with dashboard(db_url) as board:
            page = board.get("/workers").body
            name = next(info.name for info in list_workers(queue.backend))
            row = re.search(rf'<tr data-worker="{re.escape(name)}">(.*?)</tr>', page, re.S)
            assert row is not None and "<td>mail</td>" in row.group(1) and "running" in row.group(1), page
            csrf = board.sign_in()
            reply = board.post("/actions/stop-worker", {"name": name, "csrf": csrf, "back": "/workers"})
            assert reply.status == 303
            assert (
                f"asked worker {name} to finish its job and exit" in board.get(reply.headers["Location"]).body
            )
            _, err = worker.communicate(timeout=30)  # its job ends, then the worker
            assert worker.returncode == 0, err
            assert queue.backend.fetchall("queue_stats") == []  # the job ran to its end
            gone = board.post("/actions/stop-worker", {"name": name, "csrf": csrf, "back": "/workers"})
            assert "is no longer running" in board.get(gone.headers["Location"]).body
            assert 'id="no-registered"' in board.get("/workers").body
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()


def test_workers_page_tells_a_live_worker(queue: Queue, db_url: str, tmp_path: Path) -> None:
    started = tmp_path / "started"
    queue.enqueue("jobs:slow", {"started": str(started), "seconds": 60})
    worker = start_batchq(db_url, "run")
    try:
        wait_for(started.exists)
        with dashboard(db_url) as board:
            page = board.get("/workers").body
        name = f"{socket.gethostname()}:{worker.pid}"
        assert re.search(rf"<td>{re.escape(name)}[^<]*</td>.*?<span class=\"good\">yes</span>", page, re.S), (
            page
        )
    finally:
        worker.kill()
        worker.communicate()


def test_a_count_of_one_reads_as_one(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:fail", 1, max_errors=1)
    run_all(queue)
    queue.set_partitions(1)
    with dashboard(db_url) as board:
        board.sign_in()
        assert "Delete the 1 failed job of this group in queue default?" in html.unescape(
            board.get("/failures").body
        )
        assert "1 partition," in board.get("/").body


def test_a_cancel_that_cannot_be_done_says_why(queue: Queue, db_url: str) -> None:
    running = write_row(queue, **processing(queue, "host-a:4242:abc"))
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        for job_id, why in ((running, "it is being run by host-a:4242:abc"), (424242, "no job has that id")):
            reply = board.post("/actions/cancel", {"id": str(job_id), "csrf": csrf, "back": "/"})
            note = html.unescape(board.get(reply.headers["Location"]).body)
            assert f"job {job_id} was not cancelled: {why}" in note
    assert [row["id"] for row in job_rows(queue)] == [running]
