"""batchq.progress() on every backend: a running task's reports written on its row, throttled,
fenced by its claim, shown by explain and `batchq status`; rows written by hand read safely."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.jobs import reporting
from batchq.ops.registry import list_workers
from batchq.runtime.worker import RunOptions, Worker
from batchq.testing import drain, inline
from tests.support.db import sql


@pytest.fixture
def progress_queue(db_url: str) -> Any:
    q = Queue(db_url, task_modules=["progress_tasks"])
    yield q
    q.close()


def _run(queue: Queue, max_jobs: int = 1) -> None:
    Worker(queue, RunOptions(max_jobs=max_jobs, backoff_base=0)).run()


def _row(queue: Queue, job_id: int) -> tuple[Any, ...]:
    [row] = sql(queue, f"SELECT progress, progress_message, progress_at FROM batchq_job WHERE id = {job_id}")
    return row


def test_a_report_is_seen_by_another_connection_while_the_job_runs(
    progress_queue: Queue, db_url: str
) -> None:
    job_id = progress_queue.enqueue("progress_tasks:report_and_read", {"url": db_url}, keep_result=True)
    _run(progress_queue)
    seen = progress_queue.result(job_id).value
    assert seen["progress"] == 0.25
    assert seen["message"] == "a quarter done"
    assert seen["this_try"] is True
    assert any(line.startswith("progress: 25%: a quarter done (reported at ") for line in seen["details"])
    assert seen["status_progress"] == [[0.25, "a quarter done"]]  # `batchq status --json`


def test_a_chatty_task_writes_once_per_interval_and_a_failed_try_keeps_the_last(
    progress_queue: Queue, db_url: str
) -> None:
    job_id = progress_queue.enqueue("progress_tasks:chatty", {"url": db_url, "fail": True}, max_errors=3)
    _run(progress_queue)
    # The first of the thousand reports was written, none of the 999 after it within the interval.
    [error] = sql(progress_queue, f"SELECT last_error FROM batchq_job WHERE id = {job_id}")[0]
    assert "fails after reporting" in error
    progress, message, at = _row(progress_queue, job_id)
    assert (progress, message) == (0.8, "held back")  # held by the throttle, written as the try failed
    assert at is not None
    found = progress_queue.explain(job_id)
    assert found.progress == 0.8 and found.progress_this_try is None  # not running now
    assert "progress an earlier try reported: 80%: held back (at " in "\n".join(found.details)


def test_the_throttle_holds_reports_back_within_the_interval(progress_queue: Queue, db_url: str) -> None:
    job_id = progress_queue.enqueue("progress_tasks:chatty", {"url": db_url}, keep_result=True)
    _run(progress_queue)
    first, after_pause = progress_queue.result(job_id).value
    assert (first["progress"], first["message"]) == (0.0005, "step 1")
    assert (after_pause["progress"], after_pause["message"]) == (0.75, "after the pause")


def test_a_job_taken_back_gets_no_late_report(progress_queue: Queue, db_url: str) -> None:
    job_id = progress_queue.enqueue("progress_tasks:taken_back", {"url": db_url}, keep_result=True)
    _run(progress_queue)  # its finish is fenced off too: the row stays, the other worker's
    assert _row(progress_queue, job_id)[:2] == (0.1, "before")  # not 0.9, "zombie"
    found = progress_queue.explain(job_id)
    assert (found.state, found.worker) == ("running", "other:1")
    assert (found.progress, found.progress_message) == (0.1, "before")


def test_a_new_try_does_not_show_an_earlier_tries_progress_as_its_own(progress_queue: Queue) -> None:
    job_id = progress_queue.enqueue("progress_tasks:reports_twice")
    sql(
        progress_queue,
        "UPDATE batchq_job SET status = 'processing', locked_by = 'elsewhere:1', claim_token = 't', "
        "processing_at = created_at, progress = 0.5, progress_message = 'old', "
        f"progress_at = created_at WHERE id = {job_id}",
    )
    assert progress_queue.explain(job_id).progress_this_try is True  # written since the claim
    sql(
        progress_queue,
        f"UPDATE batchq_job SET progress_at = '2000-01-01 00:00:00' WHERE id = {job_id}",
    )
    found = progress_queue.explain(job_id)
    assert found.progress_this_try is False
    assert "progress an earlier try reported: 50%: old" in "\n".join(found.details)


def test_a_timeout_never_cuts_a_progress_write_in_half(
    progress_queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every report written (no throttle) while the job's timeout comes: JobTimeout lands in the
    task, never inside the statement, and the worker's connection serves the next jobs."""
    monkeypatch.setattr(reporting, "WRITE_INTERVAL_SECONDS", 0.0)
    stopped = [progress_queue.enqueue("progress_tasks:report_forever", timeout=0.3) for _ in range(5)]
    after = progress_queue.enqueue("progress_tasks:reports_twice", keep_result=True)
    _run(progress_queue, max_jobs=6)
    ids = ", ".join(str(job_id) for job_id in stopped)
    errors = sql(progress_queue, f"SELECT last_error FROM batchq_job WHERE id IN ({ids})")
    assert len(errors) == 5 and all(error.startswith("JobTimeout: ") for (error,) in errors), errors
    assert progress_queue.result(after).value == "ok"
    for job_id in stopped:
        progress, message, _ = _row(progress_queue, job_id)
        assert progress is not None and message.startswith("step ")


@pytest.mark.backends("sqlite")  # its own database file: the columns can go
def test_a_database_still_at_023_runs_the_jobs_and_says_why_no_progress(
    progress_queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    for column in ("progress", "progress_message", "progress_at"):
        sql(progress_queue, f"ALTER TABLE batchq_job DROP COLUMN {column}")
    sql(progress_queue, "DELETE FROM batchq_schema WHERE version >= 24")  # as a database at 023
    job_id = progress_queue.enqueue("progress_tasks:reports_twice", keep_result=True)
    with caplog.at_level("WARNING", logger="batchq.runtime.worker"):
        _run(progress_queue)
    assert progress_queue.result(job_id).value == "ok"
    [warning] = [r.getMessage() for r in caplog.records if "progress" in r.getMessage()]
    assert "its progress is not recorded" in warning and "run `batchq init-db`" in warning


def test_drain_keeps_every_report_on_the_outcome(progress_queue: Queue) -> None:
    progress_queue.enqueue("progress_tasks:reports_twice")
    [outcome] = drain(progress_queue)
    assert outcome.succeeded
    assert [tuple(report) for report in outcome.progress] == [(0.5, "half"), (1.0, "done")]


def test_a_thread_left_by_an_ended_call_reports_nothing(progress_queue: Queue, tmp_path: Path) -> None:
    files = {"go": str(tmp_path / "go"), "done": str(tmp_path / "done")}
    first = progress_queue.enqueue("progress_tasks:leaves_a_reporter", files)
    second = progress_queue.enqueue("progress_tasks:next_job", files)
    outcomes = drain(progress_queue)
    assert [outcome.job_id for outcome in outcomes] == [first, second]
    assert (tmp_path / "done").exists()  # the thread did report, during the second job
    assert [tuple(report) for report in outcomes[1].progress] == [(0.2, "the next job")]
    assert outcomes[0].progress == ()


def test_an_async_task_reports_too(progress_queue: Queue) -> None:
    progress_queue.enqueue("progress_tasks:reports_async")
    [outcome] = drain(progress_queue)
    assert outcome.succeeded and [tuple(r) for r in outcome.progress] == [(0.5, "half, from a coroutine")]


def test_inline_keeps_every_report_on_the_outcome(progress_queue: Queue) -> None:
    with inline(progress_queue) as ran:
        progress_queue.enqueue("progress_tasks:reports_twice")
    assert [tuple(report) for report in ran.ran[0].progress] == [(0.5, "half"), (1.0, "done")]


# -- rows written by hand -------------------------------------------------------------------


HOSTILE = [
    ("NULL", "'only a message'", None, "only a message", None),
    ("5.0", "NULL", None, None, "progress is 5.0, not a fraction"),
    ("-1", "NULL", None, None, "progress is -1"),
    ("0.5", "'tab\there\x07bell'", 0.5, "tab here bell", None),
]


@pytest.mark.parametrize(("value", "message", "fraction", "shown", "note"), HOSTILE)
def test_explain_and_status_read_progress_written_by_hand(
    progress_queue: Queue, value: str, message: str, fraction: float | None, shown: str | None, note: Any
) -> None:
    job_id = progress_queue.enqueue("progress_tasks:reports_twice")
    _write_by_hand(progress_queue, job_id, value, message)
    found = progress_queue.explain(job_id)
    assert (found.progress, found.progress_message) == (fraction, shown)
    if note is not None:
        assert any(note in line for line in found.notes), found.notes
    [info] = [info for info in list_workers(progress_queue.backend) if info.job_id == job_id]
    assert (info.job_progress, info.job_progress_message) == (fraction, shown)


def test_a_huge_message_written_by_hand_is_cut(progress_queue: Queue) -> None:
    job_id = progress_queue.enqueue("progress_tasks:reports_twice")
    if progress_queue.backend.dialect == "mysql":  # VARCHAR(200): the server refuses longer
        huge, cut_note = "'" + "\x01" * 200 + "'", False
    else:
        huge, cut_note = _repeat(progress_queue, "x", 1_000_000), True
    _write_by_hand(progress_queue, job_id, "0.5", huge)
    found = progress_queue.explain(job_id)
    assert found.progress_message is not None and len(found.progress_message) == 200
    assert found.progress_message.isprintable()
    assert any("longer than 200 characters" in line for line in found.notes) is cut_note


def _repeat(queue: Queue, char: str, times: int) -> str:
    if queue.backend.dialect == "postgresql":
        return f"repeat('{char}', {times})"
    return f"replace(hex(zeroblob({times // 2})), '0', '{char}')"  # SQLite: no repeat()


@pytest.mark.backends("sqlite")
def test_sqlite_text_in_the_progress_column(progress_queue: Queue) -> None:
    job_id = progress_queue.enqueue("progress_tasks:reports_twice")
    _write_by_hand(progress_queue, job_id, "'most of it'", "x'ff00fe'")
    found = progress_queue.explain(job_id)
    assert found.progress is None and found.progress_message == "\ufffd \ufffd"
    assert any("progress is 'most of it'" in line for line in found.notes)


@pytest.mark.backends("postgresql")
def test_postgresql_nan_in_the_progress_column(progress_queue: Queue) -> None:
    job_id = progress_queue.enqueue("progress_tasks:reports_twice")
    _write_by_hand(progress_queue, job_id, "'NaN'::float8", "NULL")
    assert progress_queue.explain(job_id).progress is None


def _write_by_hand(queue: Queue, job_id: int, value: str, message: str) -> None:
    """The job running on a registered worker, with a progress written by plain SQL."""
    worker = "byhand:1"
    sql(
        queue,
        "INSERT INTO batchq_worker (name, host, pid, kind, serves, started_at, last_seen) "
        f"SELECT '{worker}', 'byhand', 1, 'run', 'default', created_at, created_at "
        f"FROM batchq_job WHERE id = {job_id}",
    )
    sql(
        queue,
        f"UPDATE batchq_job SET status = 'processing', locked_by = '{worker}', claim_token = 't', "
        f"processing_at = created_at, progress = {value}, progress_message = {message}, "
        f"progress_at = run_at WHERE id = {job_id}",
    )
