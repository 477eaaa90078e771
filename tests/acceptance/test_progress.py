"""Progress as an operator sees it (issue 30, part 5): a real `batchq run` whose task reports
while `batchq explain` and `batchq status` read it from other processes; the dashboard's job
page, escaped, with rows written by hand."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.dashboard import dashboard
from tests.support.db import sql
from tests.support.processes import start_batchq, wait_for
from tests.support.rows import dead_worker, processing, write_row

TASKS = "jobs,progress_tasks"


def test_a_real_worker_reports_and_explain_and_status_show_it(db_url: str, tmp_path: Path) -> None:
    marker, release = tmp_path / "reported", tmp_path / "release"
    queue = Queue(db_url, task_modules=["progress_tasks"])
    job = queue.enqueue("progress_tasks:slow_reporter", {"marker": str(marker), "release": str(release)})
    worker = start_batchq(db_url, "run", BATCHQ_TASK_MODULES=TASKS)
    try:
        wait_for(marker.exists)
        text = invoke_batchq(db_url, "explain", str(job))
        assert text.returncode == 0, text.stderr
        [line] = [line for line in text.stdout.splitlines() if line.startswith("  progress")]
        assert line.startswith("  progress: 40%: resizing 40 of 100 (reported at ")
        found = json.loads(invoke_batchq(db_url, "explain", str(job), "--json").stdout)
        assert (found["state"], found["progress"], found["progress_message"]) == (
            "running",
            0.4,
            "resizing 40 of 100",
        )
        assert found["progress_this_try"] is True and found["progress_age_seconds"] >= 0
        [info] = json.loads(invoke_batchq(db_url, "status", "--json").stdout)
        assert (info["job_id"], info["job_progress"], info["job_progress_message"]) == (
            job,
            0.4,
            "resizing 40 of 100",
        )
        release.write_text("go")
        worker.wait(timeout=30)
        assert worker.returncode == 0, worker.stderr.read() if worker.stderr else ""
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=10)
    assert invoke_batchq(db_url, "explain", str(job)).returncode == 1  # finished: deleted
    queue.close()


def test_the_job_page_shows_progress_escaped(queue: Queue, db_url: str) -> None:
    running = write_row(queue, **processing(queue, dead_worker(), task="jobs:slow"))
    sql(
        queue,
        "UPDATE batchq_job SET progress = 0.425, progress_message = '<script>alert(1)</script> & more', "
        f"progress_at = processing_at WHERE id = {running}",
    )
    with dashboard(db_url) as board:
        page = board.get(f"/jobs/{running}")
    assert page.status == 200
    assert '<progress max="1" value="0.425">42.5%</progress> 42.5%' in page.body
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page.body
    assert "<script>alert" not in page.body


def test_the_job_page_reads_progress_written_by_hand(queue: Queue, db_url: str) -> None:
    rows = {}
    for value, message in (("5.0", "NULL"), ("-1", "'minus'"), ("NULL", "'only words'"), ("NULL", "NULL")):
        job = write_row(queue, **processing(queue, dead_worker(), task="jobs:slow"))
        sql(queue, f"UPDATE batchq_job SET progress = {value}, progress_message = {message} WHERE id = {job}")
        rows[job] = (value, message)
    with dashboard(db_url) as board:
        pages = {job: board.get(f"/jobs/{job}") for job in rows}
    assert all(page.status == 200 for page in pages.values())
    five, minus, words, none = (pages[job].body for job in rows)
    assert "progress is 5.0, not a fraction from 0 to 1" in five and "<progress" not in five
    assert 'id="progress-message">minus<' in minus
    assert "only words" in words and "<progress" not in words
    assert 'id="progress"' not in none
