"""The dashboard in a real browser (headless Chromium from Debian's packages, through Selenium and
Debian's chromedriver), on every backend: click through each page, act (sign in, pause and
resume, cancel, requeue and delete a failure group; search a job, retry and delete it; archive,
delete and purge messages) and see
the effect in the database, check
that hostile text is shown as text and never runs, and that a page refreshes itself.

The screenshots in docs/ (docs/operations/dashboard.md) come from test_click_through_every_page: run it with
BATCHQ_SCREENSHOTS=docs/screenshots (on MySQL, the primary backend) to write them there;
otherwise they go to the test's temporary folder.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from batchq import MessageQueue, Queue
from batchq.mq.overview import queue_figures
from batchq.ops.registry import Registration, list_workers
from batchq.runtime.sweeps import failure_groups
from batchq.runtime.worker import RunOptions, Worker
from tests.support.dashboard import TOKEN, chromium, dashboard
from tests.support.db import job_rows, sql
from tests.support.rows import dead_worker, processing, write_row

pytestmark = pytest.mark.slow

XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium()
    yield driver
    driver.quit()


@pytest.fixture
def shots(backend_name: str, tmp_path: Path) -> Callable[[Any, str], None]:
    folder = os.environ.get("BATCHQ_SCREENSHOTS")
    target = Path(folder) if folder and backend_name == "mysql" else tmp_path
    target.mkdir(parents=True, exist_ok=True)

    def shoot(driver: Any, name: str) -> None:
        height = driver.execute_script("return document.documentElement.scrollHeight")
        chrome = driver.execute_script("return window.outerHeight - window.innerHeight")
        driver.set_window_size(1280, max(500, min(int(height) + int(chrome) + 20, 1400)))
        path = target / f"{name}.png"
        assert driver.save_screenshot(str(path)), path
        driver.set_window_size(1280, 800)

    return shoot


def wait_for_text(driver: Any, css: str, text: str, timeout: float = 15) -> None:
    """Wait until an element matching ``css`` shows ``text``. Read in one script call, and
    read again when a click's page load replaced the document meanwhile."""
    script = "return Array.from(document.querySelectorAll(arguments[0]), e => e.innerText)"

    def shown(d: Any) -> bool:
        return any(text in found for found in d.execute_script(script, css))

    wait = WebDriverWait(driver, timeout, ignored_exceptions=(WebDriverException,))
    wait.until(shown, f"no {css!r} showing {text!r}")


def click_and_confirm(driver: Any, element_id: str) -> None:
    driver.find_element(By.ID, element_id).click()
    WebDriverWait(driver, 10).until(lambda d: d.switch_to.alert).accept()


def seed(queue: Queue) -> dict[str, Any]:
    """Queues an operator would see: a backlog, delayed and failed jobs, a running job whose
    worker died, a schedule and a lock."""
    queue.enqueue_many("jobs:noop", [{"user": n} for n in range(70)], queue="default")
    queue.enqueue_many("jobs:echo", [{"to": f"user{n}@example.com"} for n in range(12)], queue="mail")
    waiting = queue.enqueue(
        "jobs:echo", {"to": "ann@example.com", "subject": "Welcome"}, queue="mail", delay=600
    )
    queue.enqueue("jobs:noop", {"report": "daily"}, queue="reports", priority=5, delay=3600)
    for n in range(4):
        queue.enqueue("jobs:fail", f"order {n}", queue="billing", max_errors=1)
    queue.enqueue("jobs:return_false", queue="billing", max_errors=1)
    Worker(queue, RunOptions(backoff_base=0, queues=("billing",))).run()
    running = write_row(queue, **processing(queue, dead_worker(), task="jobs:slow"))
    queue.schedule("nightly-report", "0 3 * * *", "jobs:noop", queue="reports")
    queue.lock("reindex", ttl=600).acquire()
    big, small = failure_groups(queue)
    return {"waiting": waiting, "running": running, "big": big, "small": small}


def test_click_through_every_page(
    queue: Queue, db_url: str, browser: Any, shots: Callable[[Any, str], None]
) -> None:
    seen = seed(queue)
    with dashboard(db_url, "--refresh", "0") as board:
        browser.get(board.base + "/")
        wait_for_text(browser, "#mode", "sign in")
        browser.find_element(By.ID, "login").click()
        browser.find_element(By.ID, "token").send_keys(TOKEN)
        browser.find_element(By.ID, "sign-in").click()
        wait_for_text(browser, "#mode", "signed in")
        wait_for_text(browser, "#queues", "billing")
        shots(browser, "queues")

        browser.find_element(By.ID, "pause-mail").click()
        wait_for_text(browser, "#note", "paused queue mail")
        assert "mail" in queue.paused_queues()
        wait_for_text(browser, 'tr[data-queue="mail"] .state', "paused")
        browser.find_element(By.ID, "resume-mail").click()
        wait_for_text(browser, "#note", "resumed queue mail")
        assert queue.paused_queues() == []

        browser.find_element(By.LINK_TEXT, "default").click()
        wait_for_text(browser, "h1", "Jobs of queue default")
        shots(browser, "jobs")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#jobs tr")) == 51  # a header and 50 jobs
        browser.find_element(By.ID, "next").click()
        wait_for_text(browser, "#first", "first page")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#jobs tr")) == 1 + 71 - 50  # and the running one

        browser.get(f"{board.base}/jobs?queue=mail")
        Select(browser.find_element(By.ID, "state")).select_by_value("scheduled")
        browser.find_element(By.ID, "apply").click()
        WebDriverWait(browser, 15).until(lambda d: "state=scheduled" in d.current_url)
        wait_for_text(browser, "#jobs", "scheduled")
        browser.find_element(By.LINK_TEXT, str(seen["waiting"])).click()
        wait_for_text(browser, "#payload", "ann@example.com")
        wait_for_text(browser, "#explain", "delayed")
        shots(browser, "job")
        click_and_confirm(browser, "cancel")
        wait_for_text(browser, "#note", f"cancelled job {seen['waiting']}")
        assert seen["waiting"] not in {row["id"] for row in job_rows(queue)}

        browser.find_element(By.LINK_TEXT, "Failures").click()
        wait_for_text(browser, "#groups", "ValueError: boom")
        shots(browser, "failures")
        big, small = seen["big"], seen["small"]
        browser.find_element(By.ID, f"requeue-{big.fingerprint}-billing").click()
        alert = WebDriverWait(browser, 10).until(lambda d: d.switch_to.alert)
        assert alert.text.startswith(
            "Requeue the 4 failed jobs of this group in queue billing (those failed by "
        )
        alert.accept()
        wait_for_text(
            browser, "#note", f"requeued 4 jobs of failure group {big.fingerprint} in queue billing"
        )
        statuses = {row["id"]: row["status"] for row in job_rows(queue)}
        assert [statuses[i] for i in big.job_ids] == ["ready"] * 4
        click_and_confirm(browser, f"delete-{small.fingerprint}-billing")
        wait_for_text(browser, "#note", "deleted 1 failed job of group")
        assert not set(small.job_ids) & {row["id"] for row in job_rows(queue)}

        live = Queue(db_url)  # a live, registered worker beside the dead one holding a job
        name = f"{socket.gethostname()}:{os.getpid()}:0b5e77ed"
        live.backend.liveness.hold(name)
        Registration(live.backend, name, ["default", "mail"]).register()
        try:
            browser.find_element(By.LINK_TEXT, "Workers").click()
            wait_for_text(browser, "#workers", "gc-processing puts its jobs back")
            wait_for_text(browser, "#registry", "running")
            shots(browser, "workers")
            browser.find_element(By.ID, "stop-1").click()
            wait_for_text(browser, "#note", f"asked worker {name} to finish its job and exit")
            assert [info.stop_requested for info in list_workers(queue.backend)] == [True]
        finally:
            live.close()
        browser.find_element(By.LINK_TEXT, "Schedules").click()
        wait_for_text(browser, "#schedules", "nightly-report")
        shots(browser, "schedules")
        browser.find_element(By.LINK_TEXT, "Locks").click()
        wait_for_text(browser, "#locks", "reindex")
        shots(browser, "locks")
        browser.find_element(By.LINK_TEXT, "Metrics").click()
        wait_for_text(browser, "body", 'batchq_jobs{queue="default",state="ready"} 70.0')

        browser.get(board.base + "/")
        browser.find_element(By.ID, "logout").click()
        wait_for_text(browser, "#mode", "sign in")
        assert browser.find_elements(By.ID, "pause-mail") == []


def test_hostile_text_is_shown_and_never_runs(queue: Queue, db_url: str, browser: Any) -> None:
    job_id = queue.enqueue("jobs:fail", {"name": XSS}, max_errors=1)  # the last error quotes it too
    Worker(queue, RunOptions(backoff_base=0)).run()
    sql(queue, f"UPDATE batchq_job SET locked_by = {quoted(XSS)} WHERE id = {job_id}")
    pages = {
        f"/jobs/{job_id}": ("#payload", XSS.replace('"', '\\"')),  # inside a JSON string
        "/failures": ("#groups", "<script>window.__xss=1</script>"),
        "/jobs?queue=default&state=failed": ("#jobs", XSS),
        f"/jobs?queue=default&task={quoted_url(XSS)}": ("#task", ""),
        f"/?note={quoted_url(XSS)}": ("#note", ""),  # unsigned: not shown at all (below)
        f"/jobs?queue={quoted_url(XSS)}": ("h1", XSS),
        f"/search?state=failed&text={quoted_url('<script>')}": (
            "#results",
            "<script>window.__xss=1</script>",
        ),
        f"/search?state=failed&task={quoted_url(XSS)}": ("#scope", "Searched the only failed job"),
        "/jobs?queue=": ("#error", "which queue?"),
    }
    with dashboard(db_url, "--refresh", "0") as board:
        board_pages = [(board.base + path, css, text) for path, (css, text) in pages.items()]
        for url, css, text in board_pages:
            browser.get(url)
            if text:
                wait_for_text(browser, css, text)
            assert browser.execute_script("return window.__xss") is None, url
        browser.get(board.base + f"/?note={quoted_url(XSS)}")
        assert browser.find_elements(By.ID, "note") == []  # only a note the dashboard signed shows
        browser.get(board.base + f"/jobs/{job_id}")
        assert "<script>window.__xss=1</script>" in browser.find_element(By.ID, "last-error").text
        assert browser.find_elements(By.CSS_SELECTOR, "main script, main img") == []


def test_find_and_fix_one_job(
    queue: Queue, db_url: str, browser: Any, shots: Callable[[Any, str], None]
) -> None:
    """Search a failed job by the text of its payload, open it, retry it; find another by its
    error and delete it; each action asks first, naming the job and the count."""
    queue.enqueue_many("jobs:noop", [{"user": n} for n in range(30)], queue="default")
    failed = [
        queue.enqueue("jobs:fail", {"order": f"ORD-{n}"}, queue="billing", max_errors=1) for n in range(4)
    ]
    Worker(queue, RunOptions(backoff_base=0, queues=("billing",))).run()
    later = queue.enqueue("jobs:echo", {"to": "ann@example.com"}, queue="mail", delay=600)
    with dashboard(db_url, "--refresh", "0") as board:
        browser.get(board.base + "/login")
        browser.find_element(By.ID, "token").send_keys(TOKEN)
        browser.find_element(By.ID, "sign-in").click()
        wait_for_text(browser, "#mode", "signed in")
        browser.find_element(By.LINK_TEXT, "Search").click()
        Select(browser.find_element(By.ID, "search-state")).select_by_value("failed")
        browser.find_element(By.ID, "search-text").send_keys("ORD-2")
        browser.find_element(By.ID, "search-go").click()
        wait_for_text(browser, "#scope", "Searched all 4 failed jobs. 1 match.")
        wait_for_text(browser, "#results", "ORD-2")
        shots(browser, "search")
        browser.find_element(By.LINK_TEXT, str(failed[2])).click()
        wait_for_text(browser, "#payload", "ORD-2")
        shots(browser, "job_failed")
        browser.find_element(By.ID, "retry").click()
        alert = WebDriverWait(browser, 10).until(lambda d: d.switch_to.alert)
        job = f"job {failed[2]} (task jobs:fail, queue billing)"
        assert alert.text == f"Retry 1 failed job, {job}, now? Its failures are reset to 0 of 1 allowed."
        alert.accept()
        wait_for_text(browser, "#note", f"retried job {failed[2]} now: ready, its tries reset")
        assert {r["id"]: r["status"] for r in job_rows(queue)}[failed[2]] == "ready"

        in_error = quoted_url("'ORD-3'")  # the last error quotes the payload: "boom: {'order': 'ORD-3'}"
        browser.get(f"{board.base}/search?state=failed&text={in_error}")
        wait_for_text(browser, "#scope", "Searched all 3 failed jobs. 1 match.")  # in the last error
        browser.find_element(By.LINK_TEXT, str(failed[3])).click()
        browser.find_element(By.ID, "delete").click()
        alert = WebDriverWait(browser, 10).until(lambda d: d.switch_to.alert)
        assert (
            alert.text
            == f"Delete 1 failed job, job {failed[3]} (task jobs:fail, queue billing)? It cannot be undone."
        )
        alert.dismiss()  # asked, refused: nothing happens
        assert failed[3] in {r["id"] for r in job_rows(queue)}
        click_and_confirm(browser, "delete")
        wait_for_text(browser, "#note", f"deleted failed job {failed[3]}")
        assert failed[3] not in {r["id"] for r in job_rows(queue)}

        browser.get(f"{board.base}/search?id={later}")
        browser.find_element(By.LINK_TEXT, str(later)).click()
        wait_for_text(browser, "#explain", "delayed")
        click_and_confirm(browser, "retry")
        wait_for_text(browser, "#note", f"job {later} is due now")
        assert queue.explain(later).state == "waiting"


def quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def quoted_url(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def test_a_page_refreshes_itself(queue: Queue, db_url: str, browser: Any) -> None:
    queue.enqueue("jobs:noop", queue="default")
    with dashboard(db_url, "--refresh", "1") as board:
        browser.get(board.base + "/")
        wait_for_text(browser, "#queues", "default")
        browser.execute_script("window.__stayed = 'same page'")
        queue.enqueue("jobs:noop", queue="arrived")
        wait_for_text(browser, "#queues", "arrived")
        assert browser.execute_script("return window.__stayed") == "same page"  # no reload
        assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-refreshed")


def test_a_rebound_name_reads_nothing(queue: Queue, db_url: str) -> None:
    """DNS rebinding, as a browser lives it: attacker.example resolves to 127.0.0.1 (Chromium's
    host resolver rules stand in for the attacker's DNS), so its pages are same-origin with the
    dashboard; the dashboard refuses their Host and shows them nothing, while a name given with
    --allowed-host, and localhost, are served."""
    secret = "payload-of-job-7"
    job = queue.enqueue("jobs:noop", {"secret": secret})
    queue.lock("reindex", ttl=600).acquire()
    rules = "MAP attacker.example 127.0.0.1, MAP dash.example.test 127.0.0.1"
    driver = chromium(f"--host-resolver-rules={rules}")
    try:
        with dashboard(db_url, "--refresh", "0") as board:
            driver.get(f"http://attacker.example:{board.port}/jobs/{job}")
            shown = driver.find_element(By.TAG_NAME, "body").text
            assert secret not in shown, shown
            assert "421 this dashboard does not answer to the host 'attacker.example'" in shown, shown
            paths = ["/metrics", "/locks", "/workers", f"/jobs/{job}"]
            read = driver.execute_async_script(READ_SAME_ORIGIN, paths)
            assert not any(word in " ".join(read) for word in (secret, "reindex", "batchq_jobs")), read
            assert [line.split(" ", 1)[0] for line in read] == ["421"] * 4, read
            driver.get(f"http://localhost:{board.port}/jobs/{job}")
            wait_for_text(driver, "#payload", secret)
        with dashboard(db_url, "--refresh", "0", "--allowed-host", "dash.example.test") as board:
            driver.get(f"http://dash.example.test:{board.port}/jobs/{job}")
            wait_for_text(driver, "#payload", secret)
    finally:
        driver.quit()


# What the attacker's script does once its name points at the dashboard: read pages, same origin.
READ_SAME_ORIGIN = """
const paths = arguments[0], done = arguments[arguments.length - 1];
Promise.all(paths.map(p => fetch(p).then(r => r.text().then(t => r.status + " " + t))))
  .then(done, e => done(["error " + e]));
"""


def test_click_through_the_message_queues(
    db_url: str, browser: Any, shots: Callable[[Any, str], None]
) -> None:
    """Message queues: the list, a queue's messages, one message; archive and delete one message
    and purge a queue, each asking first with its scope and count."""
    m = MessageQueue(db_url)
    m.create_queue("mail", max_length=1000)
    ids = m.send_batch("mail", [{"to": f"user{n}@example.com", "subject": "Welcome"} for n in range(6)])
    m.send("mail", {"to": "later@example.com"}, delay=3600)
    m.read("mail", vt=600, qty=2)
    m.create_queue("orders", schema={"$id": "urn:example:order", "type": "object"})
    m.subscribe("orders-topic", "billing")
    m.publish("orders-topic", {"order": 42})
    try:
        with dashboard(db_url, "--refresh", "0") as board:
            browser.get(board.base + "/login")
            browser.find_element(By.ID, "token").send_keys(TOKEN)
            browser.find_element(By.ID, "sign-in").click()
            wait_for_text(browser, "#mode", "signed in")
            browser.find_element(By.LINK_TEXT, "Message queues").click()
            wait_for_text(browser, "#mq-queues", "subscriber billing of topic orders-topic")
            wait_for_text(browser, 'tr[data-queue="orders"]', "type urn:example:order")
            shots(browser, "mq_queues")
            browser.find_element(By.LINK_TEXT, "mail").click()
            wait_for_text(browser, "#counts", "7: 4 visible, 1 delayed, 2 held")
            shots(browser, "mq_queue")
            browser.find_element(By.LINK_TEXT, str(ids[0])).click()
            wait_for_text(browser, "#message", "user0@example.com")
            wait_for_text(browser, "#state", "held")
            shots(browser, "mq_message")
            click_and_confirm(browser, "archive")
            wait_for_text(browser, "#note", f"archived message {ids[0]} of queue mail")
            assert [a.msg_id for a in m.read_archive("mail")] == [ids[0]]
            browser.find_element(By.LINK_TEXT, str(ids[1])).click()
            wait_for_text(browser, "#message", "user1@example.com")
            browser.find_element(By.ID, "delete").click()
            alert = WebDriverWait(browser, 10).until(lambda d: d.switch_to.alert)
            asked = f"Delete message {ids[1]} of message queue mail, which a consumer holds?"
            assert alert.text == f"{asked} It is not archived."
            alert.dismiss()  # asked, refused: nothing happens
            assert m.get("mail", ids[1]) is not None
            click_and_confirm(browser, "delete")
            wait_for_text(browser, "#note", f"deleted message {ids[1]} of queue mail")
            assert m.get("mail", ids[1]) is None
            browser.find_element(By.ID, "purge-mail").click()
            alert = WebDriverWait(browser, 10).until(lambda d: d.switch_to.alert)
            assert alert.text.startswith("Delete the 5 messages of message queue mail (ids up to ")
            alert.accept()
            wait_for_text(browser, "#note", "deleted 5 messages of queue mail")
            assert [f.messages for f in queue_figures(m.backend, "mail")] == [0]
    finally:
        m.close()


def test_hostile_message_text_is_shown_and_never_runs(db_url: str, browser: Any) -> None:
    m = MessageQueue(db_url)
    m.create_queue("mail")
    msg_id = m.send("mail", {"name": XSS}, headers={"h": XSS})
    mark = "?" if m.backend.dialect == "sqlite" else "%s"
    now = {"sqlite": "'2026-01-01 00:00:00'", "mysql": "UTC_TIMESTAMP(6)", "postgresql": "now()"}
    name = '<img src=x onerror="window.__xss=3">'  # a queue name fits in 64 characters
    meta = f"INSERT INTO batchq_mq_meta (queue, created_at) VALUES ({mark}, {now[m.backend.dialect]})"
    sql(m, meta, (name,))
    pages = {
        "/mq": ("#mq-queues", name),
        "/mq/queue?queue=mail": ("#messages", "<script>window.__xss=1</script>"),
        f"/mq/message?queue=mail&id={msg_id}": ("#message", "<script>window.__xss=1</script>"),
        f"/mq/queue?queue={quoted_url(name)}": ("h1", name),
        f"/mq/message?queue={quoted_url(name)}&id=1": ("h1", name),
        "/mq/queue?queue=": ("#error", "which message queue?"),
    }
    try:
        with dashboard(db_url, "--refresh", "0") as board:
            for path, (css, text) in pages.items():
                browser.get(board.base + path)
                wait_for_text(browser, css, text)
                assert browser.execute_script("return window.__xss") is None, path
                assert browser.find_elements(By.CSS_SELECTOR, "main script, main img") == [], path
            browser.get(f"{board.base}/mq/message?queue=mail&id={msg_id}")
            assert XSS.replace('"', '\\"') in browser.find_element(By.ID, "headers").text
    finally:
        m.close()


def seed_charts(queue: Queue) -> None:
    """An hour of samples as `batchq tick` would have written them (a steady queue, a busier one
    with failures and a backlog that drains, a gap of ten minutes nobody sampled), and a queue
    whose name is hostile text (cut to MySQL's 64 characters)."""
    now = int(queue.backend.fetchone("chart_now")["now"])  # type: ignore[index]
    mark = "?" if queue.backend.dialect == "sqlite" else "%s"
    insert = (
        "INSERT INTO batchq_chart_minute (queue, minute, finished, failed, depth, oldest_age_seconds) "
        f"VALUES ({', '.join([mark] * 6)})"
    )
    for ago in range(60, 0, -1):
        if 20 <= ago < 30:
            continue  # no tick ran
        wave = (60 - ago) % 20
        rows = [
            ("default", 30 + wave, 0, max(0, 40 - ago), float(ago % 7)),
            ("mail", 12 + (ago % 5), 1 if ago % 9 == 0 else 0, 5, 20.0 + ago),
            (XSS[:64], 3, 2 if ago % 15 == 0 else 0, 1, 2.0),
        ]
        for name, finished, failed, depth, oldest in rows:
            sql(queue, insert, (name, now - ago, finished, failed, depth, oldest))


def test_the_charts_draw_on_the_server_and_run_nothing(
    queue: Queue, db_url: str, browser: Any, shots: Callable[[Any, str], None]
) -> None:
    seed_charts(queue)
    with dashboard(db_url) as board:
        browser.get(board.base + "/")
        browser.find_element(By.LINK_TEXT, "Charts").click()
        wait_for_text(browser, "#legend", "mail")
        for key in ("finished", "failed", "depth", "oldest"):
            chart = browser.find_element(By.ID, f"chart-{key}")
            assert chart.get_attribute("role") == "img" and chart.size["width"] > 500
            assert browser.find_element(By.ID, f"svg-desc-{key}").get_attribute("textContent")
        lines = browser.find_elements(By.CSS_SELECTOR, "#chart-finished g.series polyline")
        assert len(lines) == 3 * 2  # three queues, each broken once by the gap
        assert browser.execute_script("return window.__xss") is None
        names = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#legend td a")]
        assert XSS[:64] in names
        resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert all(url.startswith(board.base) for url in resources), resources
        shots(browser, "charts")
        browser.find_element(By.ID, "range-24h").click()
        wait_for_text(browser, "#ranges", "15 minutes")
        assert browser.execute_script("return window.__xss") is None
