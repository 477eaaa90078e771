"""Job history and resource accounting (issue 12), on every backend: what a finished job leaves
in batchq_history, what a failed try leaves on its row, results, keep_for, prune, filters."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import timedelta

import pytest

from batchq import ConfigError, Queue
from batchq.core.job import Kept
from batchq.jobs.history import KEPT_STATEMENT_BYTES, RESULT_MAX_BYTES, encode_result, prune
from batchq.ops.metrics import read_finished
from batchq.runtime.sweeps import gc_error
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import job_rows, run_query, sql
from tests.support.processes import batchq_cmd, batchq_env

MODULES = ["jobs", "history_jobs"]


@pytest.fixture
def hq(db_url: str) -> Iterator[Queue]:
    """A queue that may run the history tasks (tests/apps/history_jobs.py)."""
    q = Queue(db_url, task_modules=MODULES)
    yield q
    q.close()


def drain(queue: Queue, **options: object) -> Worker:
    worker = Worker(queue, RunOptions(**options))  # type: ignore[arg-type]
    worker.run()
    return worker


def test_a_success_is_kept_with_its_times_figures_and_result(hq: Queue) -> None:
    hq.configure("default", keep_for="7d")
    job_id = hq.enqueue("history_jobs:returns", {"answer": [4, 2], "text": "é"})
    worker = drain(hq)
    assert job_rows(hq) == []
    [entry] = hq.history()
    assert (entry.id, entry.queue, entry.task, entry.outcome, entry.attempts) == (
        job_id,
        "default",
        "history_jobs:returns",
        "succeeded",
        1,
    )
    assert entry.worker == worker.name
    assert entry.payload == entry.result == {"answer": [4, 2], "text": "é"}
    assert entry.result_note is None and entry.error is None
    assert entry.enqueued_at <= entry.started_at <= entry.finished_at  # type: ignore[operator]
    assert entry.wall_seconds is not None and 0 <= entry.wall_seconds < 5
    assert entry.cpu_seconds is not None and 0 <= entry.cpu_seconds < 5
    assert entry.memory_peak_bytes and entry.memory_peak_bytes > 1_000_000  # a Python process's RSS
    assert entry.memory_growth_bytes is not None and entry.memory_growth_bytes >= 0


def test_nothing_is_kept_unless_asked(hq: Queue) -> None:
    hq.enqueue("history_jobs:returns", 1)
    hq.enqueue("history_jobs:fails", max_errors=1)
    drain(hq)
    assert hq.history() == []


def test_run_keep_keeps_every_queue_and_a_keep_for_only_its_own(hq: Queue) -> None:
    hq.configure("mail", keep_for=timedelta(days=1))
    mail = hq.enqueue("history_jobs:returns", 1, queue="mail")
    other = hq.enqueue("history_jobs:returns", 2, queue="other")
    drain(hq, queues=("mail", "other"))
    assert [e.id for e in hq.history()] == [mail]
    kept = hq.enqueue("history_jobs:returns", 3, queue="other")
    drain(hq, queues=("other",), keep=True)
    assert {e.id for e in hq.history()} == {mail, kept}
    assert other not in {e.id for e in hq.history()}
    assert hq.keep_for() == {"mail": 86400.0}
    hq.configure("mail", keep_for=None)  # stop keeping; what is kept stays
    assert hq.keep_for() == {}
    hq.enqueue("history_jobs:returns", 4, queue="mail")
    drain(hq, queues=("mail",))
    assert {e.id for e in hq.history()} == {mail, kept}


@pytest.mark.parametrize("bad", [0, -1, "soon", "0s", True])
def test_a_bad_keep_for_is_refused(hq: Queue, bad: object) -> None:
    with pytest.raises(ConfigError, match="keep_for"):
        hq.configure("default", keep_for=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="queue name"):
        hq.configure("bad name", keep_for="1d")
    assert hq.keep_for() == {}


def test_a_failed_try_is_measured_on_the_row_and_the_last_one_kept(hq: Queue) -> None:
    hq.configure("default", keep_for="7d")
    job_id = hq.enqueue("history_jobs:fails", "x", max_errors=2)
    worker = drain(hq, backoff_base=0)  # both tries: no backoff
    assert worker.summary.errors == 2
    [failed] = gc_error(hq)  # still in the job table for a human, with its last try measured
    assert failed.id == job_id and failed.last_worker == worker.name
    assert failed.last_wall_seconds is not None and failed.last_wall_seconds >= 0
    assert failed.last_cpu_seconds is not None
    assert failed.last_memory_peak_bytes and failed.last_started_at is not None
    [entry] = hq.history(failed=True)
    assert (entry.id, entry.outcome, entry.attempts, entry.worker) == (job_id, "failed", 2, worker.name)
    assert entry.error is not None and "RuntimeError: history failure: 'x'" in entry.error
    assert entry.wall_seconds == pytest.approx(failed.last_wall_seconds)
    assert entry.result is None
    assert hq.history(failed=False) == []


def test_a_try_that_is_not_the_last_is_not_kept(hq: Queue) -> None:
    hq.configure("default", keep_for="7d")
    hq.enqueue("history_jobs:fails", max_errors=3)
    drain(hq, backoff_base=3600)
    assert hq.history() == []
    [row] = job_rows(hq)
    assert row["error_count"] == 1


def test_a_requeued_failure_that_then_succeeds_keeps_one_record(hq: Queue) -> None:
    hq.configure("default", keep_for="7d")
    job_id = hq.enqueue("history_jobs:fails", max_errors=1)
    drain(hq)
    assert [e.outcome for e in hq.history()] == ["failed"]
    gc_error(hq, "requeue")
    sql(hq, f"UPDATE batchq_job SET task = 'jobs:noop' WHERE id = {job_id}")  # fixed by a deploy
    drain(hq)
    [entry] = hq.history()
    assert (entry.id, entry.outcome, entry.error) == (job_id, "succeeded", None)


def test_cpu_time_is_the_jobs_own(hq: Queue) -> None:
    hq.configure("default", keep_for="7d")
    hq.enqueue("history_jobs:burns_cpu", 0.2)
    drain(hq)
    [entry] = hq.history()
    assert entry.cpu_seconds is not None and entry.cpu_seconds >= 0.1
    assert entry.wall_seconds is not None and entry.wall_seconds >= entry.cpu_seconds * 0.9


def test_memory_is_the_workers_high_water_mark_and_the_jobs_rise_over_it(db_url: str, hq: Queue) -> None:
    """In a fresh worker process: a job holding 50 MB raises the process's peak. Not by all of
    it: the mark before the job includes what start-up used and freed (measured: 29-39 MB)."""
    small = hq.enqueue("history_jobs:returns", 1, priority=1)  # runs first
    big = hq.enqueue("history_jobs:allocates", 50)
    # Started as cron starts it, by a small shell that forks it: a process exec'd straight from
    # pytest would inherit pytest's own peak in ru_maxrss (Linux keeps it across exec).
    command = ["sh", "-c", '"$@"', "sh", *batchq_cmd("run", "--keep")]
    env = batchq_env(db_url, BATCHQ_TASK_MODULES="history_jobs")
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    entries = {e.id: e for e in hq.history()}
    assert entries[small].memory_growth_bytes is not None
    assert entries[big].memory_growth_bytes is not None and entries[big].memory_growth_bytes >= 20_000_000
    assert entries[big].memory_peak_bytes is not None and entries[big].memory_peak_bytes >= 50_000_000
    assert entries[small].memory_peak_bytes is not None
    assert entries[big].memory_peak_bytes - entries[small].memory_peak_bytes >= 20_000_000


def test_results_that_json_cannot_carry_or_too_large_are_noted_never_failed(hq: Queue) -> None:
    hq.configure("default", keep_for="7d")
    a_set = hq.enqueue("history_jobs:returns_a_set")
    too_large = hq.enqueue("history_jobs:returns_text_of", RESULT_MAX_BYTES)
    fits = hq.enqueue("history_jobs:returns_text_of", RESULT_MAX_BYTES - 2)
    nothing = hq.enqueue("jobs:noop")
    worker = drain(hq)
    assert worker.summary.errors == 0
    entries = {e.id: e for e in hq.history()}
    assert entries[a_set].result == "{1, 2}"
    assert entries[a_set].result_note == "not JSON (set): its repr is stored"
    assert entries[too_large].result is None
    assert "too large to keep: 65,538 bytes" in (entries[too_large].result_note or "")
    assert entries[fits].result == "x" * (RESULT_MAX_BYTES - 2) and entries[fits].result_note is None
    assert entries[nothing].result is None and entries[nothing].result_note is None


def test_a_batch_keeps_every_job_even_when_its_results_need_several_statements(hq: Queue) -> None:
    hq.configure("default", keep_for="7d")
    small = [hq.enqueue("history_jobs:returns", i) for i in range(25)]
    drain(hq, batch_size=10)
    per_job = RESULT_MAX_BYTES - 2
    count = KEPT_STATEMENT_BYTES // (per_job * 2) * 2 + 3  # more than two pieces' worth
    large = [hq.enqueue("history_jobs:returns_text_of", per_job) for _ in range(count)]
    drain(hq, batch_size=count)
    entries = {e.id: e for e in hq.history(limit=1000)}
    assert set(entries) == set(small + large)
    assert [entries[i].result for i in small] == list(range(25))
    assert all(entries[i].result == "x" * per_job for i in large)
    assert job_rows(hq) == []


def aged(queue: Queue, job_id: int, seconds: float) -> None:
    run_query(queue, "history_age", {"id": job_id, "seconds": seconds})


def test_history_filters(hq: Queue) -> None:
    ids = {}
    for name, task, queue_name in [
        ("a", "history_jobs:returns", "mail"),
        ("b", "history_jobs:returns", "other"),
        ("c", "jobs:noop", "mail"),
        ("d", "history_jobs:fails", "mail"),
    ]:
        ids[name] = hq.enqueue(task, name, queue=queue_name, max_errors=1)
    drain(hq, queues=("mail", "other"), keep=True)
    aged(hq, ids["a"], 7200)
    assert {e.id for e in hq.history(queue="mail")} == {ids["a"], ids["c"], ids["d"]}
    assert {e.id for e in hq.history(task="history_jobs:returns")} == {ids["a"], ids["b"]}
    assert {e.id for e in hq.history(since="1h")} == {ids["b"], ids["c"], ids["d"]}
    assert [e.id for e in hq.history(failed=True)] == [ids["d"]]
    assert {e.id for e in hq.history(failed=False)} == {ids["a"], ids["b"], ids["c"]}
    assert [e.id for e in hq.history(job_id=ids["c"])] == [ids["c"]]
    assert hq.history()[-1].id == ids["a"]  # newest first: the aged one last
    assert len(hq.history(limit=2)) == 2
    assert hq.history(queue="mail", task="jobs:noop", failed=False, since=60) == hq.history(job_id=ids["c"])
    for bad in ({"limit": 0}, {"limit": True}, {"queue": "no such\n"}, {"since": -1}, {"failed": "yes"}):
        with pytest.raises(ConfigError):
            hq.history(**bad)  # type: ignore[arg-type]


def test_prune_deletes_only_old_records_in_batches(hq: Queue) -> None:
    ids = [hq.enqueue("history_jobs:returns", i) for i in range(10)]
    drain(hq, keep=True)
    for job_id in ids[:7]:
        aged(hq, job_id, 3 * 86400)
    assert prune(hq.backend, [(None, 2 * 86400)], batch=3) == 7  # batches of 3, 3 and 1
    assert {e.id for e in hq.history()} == set(ids[7:])
    assert hq.prune("1h") == 0
    assert hq.prune(0) == 3


def test_prune_without_older_than_uses_each_queues_keep_for(hq: Queue) -> None:
    hq.configure("mail", keep_for="1h")
    old_mail, new_mail = (hq.enqueue("jobs:noop", queue="mail") for _ in range(2))
    old_other = hq.enqueue("jobs:noop", queue="other")  # kept by --keep: no keep_for
    drain(hq, queues=("mail", "other"), keep=True)
    aged(hq, old_mail, 7200)
    aged(hq, old_other, 7200)
    assert hq.prune() == 1
    assert {e.id for e in hq.history()} == {new_mail, old_other}
    with pytest.raises(ConfigError, match="has no keep_for"):
        hq.prune(queue="other")
    assert hq.prune("1h", queue="mail") == 0
    assert hq.prune("1h", queue="other") == 1
    assert [e.id for e in hq.history()] == [new_mail]


def test_metrics_count_the_jobs_finished_within_the_window(hq: Queue) -> None:
    ids = [hq.enqueue("history_jobs:burns_cpu", 0.01) for _ in range(3)]
    hq.enqueue("history_jobs:fails", max_errors=1)
    drain(hq, keep=True)
    aged(hq, ids[0], 7200)
    finished = {(f.task, f.outcome): f for f in read_finished(hq.backend, 3600)}
    assert set(finished) == {("history_jobs:burns_cpu", "succeeded"), ("history_jobs:fails", "failed")}
    burned = finished["history_jobs:burns_cpu", "succeeded"]
    assert (burned.queue, burned.jobs) == ("default", 2)
    assert burned.cpu_seconds >= 0.015 and burned.wall_seconds >= burned.wall_max_seconds > 0


@pytest.mark.parametrize("through", ["claim", "claim of one", "delete"])
def test_the_measurements_reach_the_record_exactly_as_measured(hq: Queue, through: str) -> None:
    """The claim carries wall time in nanoseconds and CPU time in microseconds as integers
    (history.Meter.kept), in a JSON array, or as plain parameters when it keeps one job: the
    record holds them in seconds, unknown figures as NULL, the result and its note as sent. A
    finished job not named in ``kept`` is deleted and not kept."""
    first, second, third = hq.enqueue("jobs:noop"), hq.enqueue("jobs:noop"), hq.enqueue("jobs:noop")
    backend = hq.backend
    done = backend.stores.jobs.claim("default", "w1", "token-1", 3).jobs
    assert [job.id for job in done] == [first, second, third]
    kept = [
        Kept(first, 123_456_789, 250_000, 123_456_789, 4_096, *encode_result({"n": [1, 2]})),
        # no CPU or memory figures; a result JSON cannot carry
        Kept(second, 2_000, None, None, None, *encode_result(object())),
    ]
    if through == "claim of one":
        kept = kept[1:]
    if through == "delete":
        assert backend.stores.jobs.delete_jobs(done, kept) == 3
    else:
        claim = backend.stores.jobs.claim("default", "w1", "token-2", 1, done, kept=kept)
        assert (claim.deleted, claim.jobs) == (3, [])
    assert job_rows(hq) == []
    records = {entry.id: entry for entry in hq.history()}
    assert set(records) == {entry.id for entry in kept}
    if through != "claim of one":
        measured = records[first]
        assert measured.wall_seconds == pytest.approx(0.123456789, abs=1e-12)
        figures = (measured.cpu_seconds, measured.memory_peak_bytes, measured.memory_growth_bytes)
        assert figures == (0.25, 123_456_789, 4_096)
        assert (measured.result, measured.result_note) == ({"n": [1, 2]}, None)
    bare = records[second]
    assert bare.wall_seconds == pytest.approx(2e-6, abs=1e-12)
    assert (bare.cpu_seconds, bare.memory_peak_bytes, bare.memory_growth_bytes) == (None, None, None)
    assert isinstance(bare.result, str) and bare.result.startswith("<object object at")
    assert bare.result_note == "not JSON (object): its repr is stored"


@pytest.mark.parametrize("path", ["claim of one", "claim of a batch", "last delete"])
def test_a_job_id_used_again_replaces_the_older_record(hq: Queue, path: str) -> None:
    """Ids restart after a TRUNCATE of batchq_job (MySQL, PostgreSQL's RESTART IDENTITY): a kept
    job whose id an older record holds replaces that record rather than failing the worker, on
    each path that copies into the history. Simulated by moving older records to the new jobs'
    ids."""
    count = 2 if path == "claim of a batch" else 1
    old = [hq.enqueue("jobs:noop") for _ in range(count)]
    drain(hq, keep=True)
    new = [hq.enqueue("history_jobs:returns", 7) for _ in range(count)]
    for old_id, new_id in zip(old, new):
        sql(hq, f"UPDATE batchq_history SET id = {new_id} WHERE id = {old_id}")
    assert sorted(entry.id for entry in hq.history()) == new
    options: dict[str, object] = {"keep": True, "batch_size": count}
    if path == "last delete":
        options["max_jobs"] = 1
    worker = drain(hq, **options)
    assert worker.summary.succeeded == count
    records = hq.history()
    assert sorted(entry.id for entry in records) == new
    assert {(entry.task, entry.result) for entry in records} == {("history_jobs:returns", 7)}


def test_a_failed_try_is_measured_where_nothing_is_kept(hq: Queue) -> None:
    """A success is measured only when it is kept (its figures go nowhere else); a failed try is
    always measured on its row, also in batch mode, between successes, with no history kept."""
    ok_before = hq.enqueue("history_jobs:returns", 1, priority=2)
    failing = hq.enqueue("history_jobs:fails", "y", max_errors=1, priority=1)
    ok_after = hq.enqueue("history_jobs:returns", 2)
    worker = drain(hq, batch_size=10)
    assert (worker.summary.succeeded, worker.summary.errors) == (2, 1)
    assert list(worker.summary.job_ids) == [ok_before, failing, ok_after]
    [failed] = gc_error(hq)
    assert failed.id == failing
    assert failed.last_wall_seconds is not None and failed.last_wall_seconds >= 0
    assert failed.last_cpu_seconds is not None and failed.last_memory_peak_bytes
    assert hq.history(failed=True) == [] and hq.history(failed=False) == []
