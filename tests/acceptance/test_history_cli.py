"""Job history from the command line (issue 12): `batchq configure --keep-for`, `run --keep`,
`history` (text and --json), `prune`, gc-error's measurements, `metrics`; and four worker
processes draining a few hundred jobs, each of which ends in the history exactly once."""

from __future__ import annotations

import json

from prometheus_client.parser import text_string_to_metric_families

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import run_query
from tests.support.processes import assert_one_line_error, run_batchq, start_batchq

MODULES = "jobs,history_jobs"


def test_configure_run_history_prune(queue: Queue, db_url: str) -> None:
    assert invoke_batchq(db_url, "configure", "mail", "--keep-for", "7d").returncode == 0
    assert "  keep_for     7d00h\n" in invoke_batchq(db_url, "configure", "mail").stdout
    assert_one_line_error(
        invoke_batchq(db_url, "configure", "mail", "--keep-for", "soon"), "keep_for", status=2
    )
    done = queue.enqueue("jobs:echo", {"n": 1}, queue="mail")
    failed = queue.enqueue("jobs:fail", "x", queue="mail", max_errors=1)
    ran = run_batchq(db_url, "run", "--queue", "mail", BATCHQ_TASK_MODULES=MODULES)
    assert (ran.returncode, ran.stdout) == (0, "")

    text = invoke_batchq(db_url, "history").stdout.splitlines()
    assert text[0].startswith("      id finished (UTC)      queue        task ")
    assert text[0].endswith("outcome   tries     wall      cpu  peak MB  result")
    assert text[1].split()[0] == str(failed)
    assert "mail" in text[1] and "failed" in text[1] and "ValueError: boom: 'x'" in text[1]
    assert text[2].split()[0] == str(done) and text[2].endswith('{"n": 1}') and " succeeded " in text[2]
    records = json.loads(invoke_batchq(db_url, "history", "--json", "--succeeded").stdout)
    assert [(r["id"], r["outcome"], r["result"], r["attempts"]) for r in records] == [
        (done, "succeeded", {"n": 1}, 1)
    ]
    assert {"wall_seconds", "cpu_seconds", "memory_peak_bytes", "memory_growth_bytes", "worker"} <= set(
        records[0]
    )
    assert json.loads(invoke_batchq(db_url, "history", "--json", "--failed", "--queue", "other").stdout) == []
    none = invoke_batchq(db_url, "history", "--task", "nothing:here")
    assert none.stdout == "no finished jobs kept that match\n"

    report = invoke_batchq(db_url, "gc-error")
    assert report.returncode == 3 and "      last try: " in report.stdout and " wall, " in report.stdout

    families = {f.name: f for f in text_string_to_metric_families(invoke_batchq(db_url, "metrics").stdout)}
    finished = {
        (s.labels["task"], s.labels["outcome"]): s.value
        for s in families["batchq_finished_jobs"].samples
        if s.name == "batchq_finished_jobs"
    }
    assert finished == {("jobs:echo", "succeeded"): 1.0, ("jobs:fail", "failed"): 1.0}

    run_query(queue, "history_age", {"id": done, "seconds": 8 * 86400})
    pruned = invoke_batchq(db_url, "prune")  # the queue's keep_for: 7 days
    assert (pruned.returncode, pruned.stdout, pruned.stderr) == (0, "", "")  # quiet, for cron
    assert [r["id"] for r in json.loads(invoke_batchq(db_url, "history", "--json").stdout)] == [failed]
    pruned = invoke_batchq(db_url, "-v", "prune", "--older-than", "0s")
    assert pruned.stderr == "batchq: pruned 1 history record\n"
    assert_one_line_error(invoke_batchq(db_url, "prune", "--queue", "default"), "has no keep_for", status=2)


def test_configure_refuses_a_bad_queue_name_when_printing_too(queue: Queue, db_url: str) -> None:
    for name in ("", "no spaces"):
        assert_one_line_error(invoke_batchq(db_url, "configure", name), f"bad queue name {name!r}", status=2)


def test_four_workers_keep_every_job_exactly_once(queue: Queue, db_url: str) -> None:
    # 10 ms each: the four workers start while there is work left (one drained all 300 once).
    ids = [queue.enqueue("jobs:echo", {"i": i, "sleep": 0.01}) for i in range(300)]
    workers = [
        start_batchq(db_url, "run", "--keep", "--max-seconds", "120", BATCHQ_TASK_MODULES=MODULES)
        for _ in range(4)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err
    counts = run_query(queue, "history_count")
    assert [int(job_id) for job_id, _ in counts] == ids
    assert {int(n) for _, n in counts} == {1}
    kept = queue.history(limit=1000)
    expected = {job_id: {"i": i, "sleep": 0.01} for i, job_id in enumerate(ids)}
    assert {entry.id: entry.result for entry in kept} == expected
    assert len({entry.worker for entry in kept}) > 1  # the work was shared
