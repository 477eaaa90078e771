"""The dashboard finds and fixes one job, on every backend, over a real `batchq dashboard`:
search by id, task and text (payload or last error) in each state and the history, hostile
search text and odd rows written by plain SQL (never a 500), the bound on what a search reads,
and a job page's retry, run-now, delete and cancel with their confirmations."""

from __future__ import annotations

import html
import pickle
import re
import urllib.parse

from batchq import Queue
from batchq.dashboard.search import SEARCH_WINDOW
from batchq.runtime.worker import RunOptions, Worker
from tests.support.dashboard import Dashboard, dashboard
from tests.support.db import job_rows, sql
from tests.support.rows import dead_worker, processing, write_row


def run_all(queue: Queue) -> None:
    Worker(queue, RunOptions(backoff_base=0)).run()


def search(board: Dashboard, **params: str) -> tuple[int, str, list[int]]:
    """The reply's status, its scope line, and the ids listed."""
    reply = board.get(f"/search?{urllib.parse.urlencode(params)}")
    assert "Traceback" not in reply.body and reply.status != 500, reply.body[:2000]
    found = re.search(r'<p id="scope">(.*?)</p>', reply.body, re.S)
    scope = " ".join(html.unescape(found.group(1)).split()) if found else ""
    table = reply.body.split('id="results"', 1)[-1] if 'id="results"' in reply.body else ""
    ids = [int(i) for i in re.findall(r"<tr>\s*<td>(?:<a href=\"/jobs/\d+\">)?(\d+)", table)]
    return reply.status, scope, ids


def placeholder(queue: Queue) -> str:
    return "?" if queue.backend.dialect == "sqlite" else "%s"


def set_error(queue: Queue, job_id: int, error: str) -> None:
    p = placeholder(queue)
    sql(queue, f"UPDATE batchq_job SET last_error = {p} WHERE id = {p}", (error, job_id))


def test_search_finds_a_job_by_id_task_and_text(queue: Queue, db_url: str) -> None:
    failed = [queue.enqueue("jobs:fail", {"order": f"A-{n}"}, max_errors=1) for n in range(3)]
    run_all(queue)
    waiting = queue.enqueue("jobs:noop", {"order": "B-7", "note": "50% off_now"})
    delayed = queue.enqueue("jobs:noop", {"order": "C-9"}, delay=600)
    queue.enqueue("jobs:noop", {"order": "B-8"}, queue="other")
    blocked = queue.enqueue("jobs:noop", {"order": "K-1"}, concurrency_key="k", delay=600)
    running = write_row(queue, **processing(queue, dead_worker(), payload=b'{"order": "R-1"}'))
    with dashboard(db_url) as board:
        assert search(board, id=str(failed[1]))[2] == [failed[1]]
        status, scope, ids = search(board, id="999999")
        assert (status, ids) == (200, []) and "job 999999" in scope
        assert search(board, state="failed", text="A-1")[2] == [failed[1]]
        assert sorted(search(board, state="failed", task="jobs:fail")[2]) == sorted(failed)
        assert search(board, state="failed", task="jobs:noop")[2] == []
        # the last error: ValueError("boom: {'order': 'A-2'}")
        assert search(board, state="failed", text="boom: {'order': 'A-2'}")[2] == [failed[2]]
        assert search(board, state="ready", text="B-7")[2] == [waiting]
        assert search(board, state="ready", text="B-")[2] != []
        assert search(board, state="ready", text="B-", queue="other")[2] != [waiting]
        assert search(board, state="scheduled", text="C-9")[2] == [delayed]
        assert search(board, state="ready", text="C-9")[2] == []
        assert search(board, state="processing", text="R-1")[2] == [running]
        assert search(board, state="blocked", text="K-1")[2] == [blocked]
        # case-sensitive, and LIKE's wildcards are plain characters
        assert search(board, state="failed", text="a-1")[2] == []
        assert search(board, state="ready", text="50% off_now")[2] == [waiting]
        assert search(board, state="ready", text="%")[2] == [waiting]
        assert search(board, state="ready", text="_")[2] == [waiting]
        assert search(board, state="ready", text="50_ off")[2] == []
        status, scope, _ = search(board, state="failed", text="A-")
        assert status == 200 and scope.startswith("Searched all 3 failed jobs."), scope


def test_search_reads_the_history_when_kept(queue: Queue, db_url: str) -> None:
    queue.configure("default", keep_for="1h")
    done = queue.enqueue("jobs:noop", {"order": "H-1"})
    gone = queue.enqueue("jobs:fail", {"order": "H-2"}, max_errors=1)
    run_all(queue)
    with dashboard(db_url) as board:
        status, scope, ids = search(board, state="history", text="H-1")
        assert (status, ids) == (200, [done]) and "finished jobs in the history" in scope
        assert search(board, state="history", text="boom")[2] == [gone]
        status, scope, ids = search(board, state="history", text="H-1", queue="default")
        assert ids == [done] and "finished jobs of queue default in the history" in scope, scope
        assert search(board, state="history", text="H-1", queue="other")[2] == []
        assert search(board, id=str(done))[2] == [done]  # finished: only the history holds it
        page = board.get(f"/search?id={gone}").body
        assert "history: failed" in page and page.count(f">{gone}<") == 2  # failed, and kept


def test_hostile_search_text_and_odd_rows_are_never_a_500(queue: Queue, db_url: str) -> None:
    binary = write_row(queue, payload=b"\xff\xfe\x00needle\x80\x81", status="failed", serializer="json")
    pickled = write_row(
        queue, payload=pickle.dumps({"secret": "pickled-needle"}), status="failed", serializer="pickle"
    )
    set_error(queue, binary, 'it\'s "quoted" <b>bold</b> \x01\x1f ctl')
    with dashboard(db_url) as board:
        assert search(board, state="failed", text="needle")[2] == [binary]  # only text is searched
        assert search(board, state="failed", text="pickled-needle")[2] == []  # a pickle is not
        assert search(board, id=str(pickled))[2] == [pickled]
        for text in ("it's", '"quoted"', "<b>bold</b>", "\x01\x1f ctl", "'; DROP TABLE batchq_job; --"):
            status, _, ids = search(board, state="failed", text=text)
            assert status == 200 and ids == ([] if "DROP" in text else [binary]), (text, ids)
        body = board.get("/search?state=failed&text=bold").body
        assert "<b>bold</b>" not in body and "&lt;b&gt;bold&lt;/b&gt;" in body
        for params in (
            {"text": "x" * 201},
            {"text": "é" * 300},
            {"id": "1x"},
            {"id": str(2**63)},
            {"state": "nope"},
            {"task": "t" * 256},
        ):
            reply = board.get(f"/search?{urllib.parse.urlencode(params)}")
            assert reply.status == 400, (params, reply.status)
            assert "bad " in html.unescape(reply.body)
        assert board.get("/search?text=%FF%FE").status == 400
        assert board.get("/search?text=a%00b").status == 400
        assert {row["id"] for row in job_rows(queue)} == {binary, pickled}  # nothing written


def test_a_search_reads_only_the_newest_window_of_a_state(queue: Queue, db_url: str) -> None:
    oldest = queue.enqueue("jobs:noop", {"order": "OLD-1"})
    p = placeholder(queue)
    sql(queue, f"UPDATE batchq_job SET run_at = {p} WHERE id = {p}", ("2001-01-01 00:00:00", oldest))
    small = queue.enqueue("jobs:noop", {"order": "SMALL-1"}, queue="small")
    sql(queue, f"UPDATE batchq_job SET run_at = {p} WHERE id = {p}", ("2001-01-01 00:00:00", small))
    queue.enqueue_many("jobs:noop", [{"n": n} for n in range(SEARCH_WINDOW)])
    with dashboard(db_url) as board:
        status, scope, ids = search(board, state="ready", text="OLD-1")
        assert (status, ids) == (200, []), scope
        assert scope.startswith(f"Searched the newest {SEARCH_WINDOW:,} ready jobs: older"), scope
        assert search(board, state="ready", text="SMALL-1")[2] == []  # outside every queue's window
        assert search(board, id=str(oldest))[2] == [oldest]  # an id is always found
        status, scope, ids = search(board, state="ready", text="SMALL-1", queue="small")
        assert (status, ids) == (200, [small]), scope  # a queue's own window: searched whole
        assert scope.startswith("Searched the only ready job of queue small."), scope


def test_a_failed_job_is_retried_or_deleted_from_its_page(queue: Queue, db_url: str) -> None:
    one, two = (queue.enqueue("jobs:fail", n, max_errors=2) for n in range(2))
    run_all(queue)
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        page = html.unescape(board.get(f"/jobs/{one}").body)
        job = f"job {one} (task jobs:fail, queue default)"
        assert f"Retry 1 failed job, {job}, now? Its failures are reset to 0 of 2 allowed." in page
        assert f"Delete 1 failed job, job {one} (task jobs:fail, queue default)?" in page
        reply = board.post("/actions/retry", {"id": str(one), "state": "failed", "csrf": csrf})
        assert "retried+job" in reply.headers["Location"]
        state = {row["id"]: row for row in job_rows(queue)}
        assert (state[one]["status"], state[one]["error_count"]) == ("ready", 0)
        again = board.post("/actions/retry", {"id": str(one), "state": "failed", "csrf": csrf})
        assert "no+longer+failed" in again.headers["Location"]
        assert (
            "no+longer+failed"
            in board.post("/actions/delete", {"id": str(one), "csrf": csrf}).headers["Location"]
        )
        assert one in {row["id"] for row in job_rows(queue)}  # a ready job is not deleted as failed
        reply = board.post("/actions/delete", {"id": str(two), "csrf": csrf})
        assert "deleted+failed+job" in reply.headers["Location"]
        assert two not in {row["id"] for row in job_rows(queue)}
        assert board.post("/actions/retry", {"id": str(one), "state": "x", "csrf": csrf}).status == 400
        assert board.post("/actions/retry", {"id": str(one), "state": "failed"}).status == 403  # no CSRF
        assert (
            board.post("/actions/delete", {"id": str(one), "csrf": csrf}, Origin="http://evil.example").status
            == 403
        )
        assert board.get(f"/actions/retry?id={one}&state=failed").status == 405


def test_a_deleted_parent_lets_its_failed_dependant_be_retried(queue: Queue, db_url: str) -> None:
    """A dependant fails with its parent; once the dashboard deletes the parent, a retry of the
    dependant runs it without that parent, as after `batchq gc-error --delete`."""
    parent = queue.enqueue("jobs:fail", max_errors=1)
    child = queue.enqueue("jobs:noop", after=parent)
    run_all(queue)
    assert {row["id"]: row["status"] for row in job_rows(queue)} == {parent: "failed", child: "failed"}
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        assert (
            "deleted+failed+job"
            in board.post("/actions/delete", {"id": str(parent), "csrf": csrf}).headers["Location"]
        )
        reply = board.post("/actions/retry", {"id": str(child), "state": "failed", "csrf": csrf})
        assert "retried+job" in reply.headers["Location"]
    assert {row["id"]: row["status"] for row in job_rows(queue)} == {child: "ready"}
    run_all(queue)
    assert job_rows(queue) == []  # it ran, and succeeded


def test_a_retry_keeps_the_unique_key_and_the_bound(queue: Queue, db_url: str) -> None:
    """A failed job is requeued as gc-error requeues it: not while another job holds its unique
    key, nor into a full bounded queue (reject)."""
    first = queue.enqueue("jobs:fail", unique_key="order-1", max_errors=1)
    run_all(queue)
    holder = queue.enqueue("jobs:noop", unique_key="order-1", delay=600)
    queue.configure("tight", max_length=1, overflow="reject")
    full = queue.enqueue("jobs:fail", queue="tight", max_errors=1)
    Worker(queue, RunOptions(backoff_base=0, queues=("tight",))).run()
    queue.enqueue("jobs:noop", queue="tight", delay=600)  # the bound's one place, taken
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        reply = board.post("/actions/retry", {"id": str(first), "state": "failed", "csrf": csrf})
        assert f"its+unique+key+is+held+by+job+{holder}" in reply.headers["Location"]
        reply = board.post("/actions/retry", {"id": str(full), "state": "failed", "csrf": csrf})
        assert "was+not+retried" in reply.headers["Location"] and "full" in reply.headers["Location"]
    statuses = {r["id"]: r["status"] for r in job_rows(queue)}
    assert (statuses[first], statuses[full]) == ("failed", "failed")


def test_a_delayed_job_is_run_now_or_cancelled_from_its_page(queue: Queue, db_url: str) -> None:
    later = queue.enqueue("jobs:noop", delay=3600)
    other = queue.enqueue("jobs:noop", delay=3600)
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        page = html.unescape(board.get(f"/jobs/{later}").body)
        assert f"Make 1 delayed job, job {later} (task jobs:noop, queue default), due now?" in page
        assert f"Cancel 1 waiting job, job {later} (task jobs:noop, queue default)" in page
        assert 'id="delete"' not in page
        reply = board.post("/actions/retry", {"id": str(later), "state": "scheduled", "csrf": csrf})
        assert "is+due+now" in reply.headers["Location"]
        row = {r["id"]: r for r in job_rows(queue)}[later]
        assert row["status"] == "ready"
        assert queue.explain(later).state == "waiting"
        board.post("/actions/cancel", {"id": str(other), "csrf": csrf})
        assert other not in {r["id"] for r in job_rows(queue)}


def test_a_running_job_offers_no_action(queue: Queue, db_url: str) -> None:
    running = write_row(queue, **processing(queue, dead_worker()))
    with dashboard(db_url) as board:
        csrf = board.sign_in()
        page = board.get(f"/jobs/{running}").body
        assert "A running job cannot be stopped from here" in page
        assert not any(f'id="{button}"' in page for button in ("retry", "delete", "cancel"))
        reply = board.post("/actions/retry", {"id": str(running), "state": "failed", "csrf": csrf})
        assert "no+longer+failed" in reply.headers["Location"]
        reply = board.post("/actions/retry", {"id": str(running), "state": "scheduled", "csrf": csrf})
        assert "no+longer+delayed" in reply.headers["Location"]
        assert (
            "no+longer+failed"
            in board.post("/actions/delete", {"id": str(running), "csrf": csrf}).headers["Location"]
        )
    assert {r["id"]: r["status"] for r in job_rows(queue)} == {running: "processing"}


def test_read_only_offers_no_job_action(queue: Queue, db_url: str) -> None:
    failed = queue.enqueue("jobs:fail", max_errors=1)
    run_all(queue)
    with dashboard(db_url, token=None) as board:
        page = board.get(f"/jobs/{failed}").body
        assert 'id="retry"' not in page and 'id="delete"' not in page
        assert board.post("/actions/retry", {"id": str(failed), "state": "failed"}).status == 403
        assert board.post("/actions/delete", {"id": str(failed)}).status == 403
    assert {r["id"]: r["status"] for r in job_rows(queue)} == {failed: "failed"}


def test_text_columns_holding_bytes_are_searched_and_shown(queue: Queue, db_url: str) -> None:
    """Rows written by plain SQL whose text columns hold bytes that are not UTF-8: a BLOB, or
    (SQLite) text that is no UTF-8; MySQL and PostgreSQL refuse such text, so there it is the
    payload alone."""
    odd = write_row(queue, payload=b"\xc3\x28 odd-payload \xff", status="failed")
    if queue.backend.dialect == "sqlite":
        sql(
            queue, "UPDATE batchq_job SET last_error = CAST(X'FF4F44442D455252' AS TEXT) WHERE id = ?", (odd,)
        )
        sql(queue, "UPDATE batchq_job SET task = X'6A6F62733AFF' WHERE id = ?", (odd,))
    with dashboard(db_url) as board:
        assert search(board, state="failed", text="odd-payload")[2] == [odd]
        if queue.backend.dialect == "sqlite":
            status, _, ids = search(board, state="failed", text="ODD-ERR")
            assert (status, ids) == (200, [odd])
            assert "jobs:\ufffd" in html.unescape(board.get("/search?state=failed&text=ODD-ERR").body)
        assert board.get(f"/jobs/{odd}").status == 200
