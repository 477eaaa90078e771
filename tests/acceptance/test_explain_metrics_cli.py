"""`batchq explain` and `batchq metrics` as an operator (and cron) runs them: output, --json, exit
statuses, a real worker alive and then SIGKILLed, and the textfile node_exporter reads (issue 13)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from batchq import Queue
from batchq.ops.metrics import write_textfile
from tests.support.cli import invoke_batchq
from tests.support.processes import assert_one_line_error, batchq_env, start_batchq, wait_for

FAMILIES = {
    "batchq_jobs",
    "batchq_queue_paused",
    "batchq_oldest_due_job_age_seconds",
    "batchq_oldest_processing_job_age_seconds",
    "batchq_locks_held",
    # Jobs kept in history that finished within the window (issue 13).
    "batchq_finished_jobs",
    "batchq_finished_jobs_wall_seconds",
    "batchq_finished_jobs_wall_seconds_max",
    "batchq_finished_jobs_cpu_seconds",
    "batchq_finished_jobs_window_seconds",
    # Message queues (issue 28): their families are there even with no message queue.
    "batchq_mq_messages",
    "batchq_mq_oldest_message_age_seconds",
    "batchq_mq_redelivered_messages",
    "batchq_mq_archived_messages",
    "batchq_mq_sent",
    "batchq_mq_max_length",
    "batchq_mq_subscription_messages",
    # For the alerting kit's rules (deploy/prometheus/batchq-alerts.yml).
    "batchq_workers",
    "batchq_schedule_next_run_timestamp_seconds",
}


def test_explain_prints_plain_words_and_json(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:noop", priority=1)
    job = queue.enqueue("jobs:noop")
    queue.pause("default")
    result = invoke_batchq(db_url, "explain", str(job))
    assert (result.returncode, result.stderr) == (0, "")
    summary, *details = result.stdout.splitlines()
    assert summary.startswith(f"job {job}: waiting, due since ")
    assert "queue default is paused" in summary
    ahead = "  1 job ahead of it in queue default (claimed first: higher priority, then due earlier, "
    assert f"{ahead}then lower id)" in details
    found = json.loads(invoke_batchq(db_url, "explain", str(job), "--json").stdout)
    assert (found["id"], found["state"], found["exists"], found["jobs_ahead"]) == (job, "waiting", True, 1)
    assert found["queue_paused"] is True
    assert _without_age(found["summary"]) == _without_age(summary)  # a second may pass between runs


def _without_age(summary: str) -> str:
    return re.sub(r"\([^()]* ago\)", "(… ago)", summary)


def test_explain_an_unknown_id_exits_1_in_one_line(queue: Queue, db_url: str) -> None:
    result = invoke_batchq(db_url, "explain", "424242")
    assert_one_line_error(result, "no job 424242: it may have finished")
    assert result.stdout == ""
    as_json = invoke_batchq(db_url, "explain", "424242", "--json")
    assert_one_line_error(as_json, "no job 424242")
    assert json.loads(as_json.stdout)["state"] == "unknown"
    assert invoke_batchq(db_url, "explain", "abc").returncode == 2  # a usage error


def test_explain_a_real_worker_alive_then_killed(queue: Queue, db_url: str, tmp_path: Path) -> None:
    started = tmp_path / "started"
    job = queue.enqueue("jobs:slow", {"started": str(started), "seconds": 60})
    worker = start_batchq(db_url, "run")
    try:
        wait_for(started.exists)
        alive = json.loads(invoke_batchq(db_url, "explain", str(job), "--json").stdout)
        assert (alive["state"], alive["worker_alive"]) == ("running", True)
        assert alive["worker"].split(":")[1] == str(worker.pid)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)

    def gone() -> dict[str, object] | None:
        found = json.loads(invoke_batchq(db_url, "explain", str(job), "--json").stdout)
        return found if found["worker_alive"] is False else None  # once the server saw the socket close

    found = wait_for(gone, timeout=15, interval=0.2)
    assert found["state"] == "running"
    assert "its worker is gone: `batchq gc-processing` puts the job back" in found["summary"]


def test_metrics_prints_the_text_format(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:noop", queue="mail")
    result = invoke_batchq(db_url, "metrics")
    assert (result.returncode, result.stderr) == (0, "")
    families = {family.name: family for family in text_string_to_metric_families(result.stdout)}
    assert set(families) == FAMILIES
    assert families["batchq_jobs"].type == "gauge"
    ready = [s for s in families["batchq_jobs"].samples if s.labels == {"queue": "mail", "state": "ready"}]
    assert [s.value for s in ready] == [1]


def test_metrics_textfile_is_replaced_whole(queue: Queue, db_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "textfile_collector"
    folder.mkdir()
    path = folder / "batchq.prom"
    queue.enqueue("jobs:noop")
    first = invoke_batchq(db_url, "metrics", "--textfile", str(path))
    assert (first.returncode, first.stdout, first.stderr) == (0, "", "")
    inode = path.stat().st_ino
    assert set(_families(path.read_text())) == FAMILIES
    queue.enqueue("jobs:noop")
    assert invoke_batchq(db_url, "metrics", "--textfile", str(path)).returncode == 0
    assert path.stat().st_ino != inode  # a new file renamed over the old one, never rewritten in place
    assert _families(path.read_text())["batchq_jobs"][("default", "ready")] == 2
    assert [p.name for p in folder.iterdir()] == ["batchq.prom"]  # no temporary file left


def test_metrics_textfile_readers_never_see_half_a_file(queue: Queue, db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "batchq.prom"
    for n in range(300):  # a file of some size: about 100 KB
        queue.enqueue("jobs:noop", queue=f"queue-{n:03d}")
    assert invoke_batchq(db_url, "metrics", "--textfile", str(path)).returncode == 0
    reader = subprocess.Popen([sys.executable, "-c", READER, str(path)], stdout=subprocess.PIPE, text=True)
    write = WRITER.format(path=str(path))
    writers = [subprocess.Popen([sys.executable, "-c", write], env=batchq_env(db_url)) for _ in range(3)]
    assert all(writer.wait(timeout=120) == 0 for writer in writers)
    reader.send_signal(signal.SIGTERM)
    reads, torn = map(int, reader.communicate(timeout=10)[0].split())
    assert reads > 0 and torn == 0


# `batchq metrics --textfile PATH` ten times in one process.
WRITER = """
from batchq.cli import cli
for _ in range(10):
    cli.main(["metrics", "--textfile", {path!r}], prog_name="batchq", standalone_mode=False)
"""

# A node_exporter stand-in: reads the file in a loop and counts the reads that were not whole.
READER = """
import signal, sys
path, reads, torn = sys.argv[1], 0, 0
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
while not stop:
    with open(path) as f:
        text = f.read()
    reads += 1
    torn += not text.endswith("batchq_locks_held 0.0\\n")
print(reads, torn)
"""


def test_metrics_textfile_keeps_the_old_file_when_the_database_fails(tmp_path: Path) -> None:
    path = tmp_path / "batchq.prom"
    path.write_text("old\n")
    result = invoke_batchq(f"sqlite:///{tmp_path / 'empty.db'}", "metrics", "--textfile", str(path))
    assert_one_line_error(result, "batchq init-db")
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batchq.prom"]  # no empty.db made


def test_metrics_textfile_never_writes_through_a_planted_link(queue: Queue, tmp_path: Path) -> None:
    """The temporary file has a random name, created exclusively: a symlink planted where the
    old name (path.pid.thread) would be is never followed, and the new file is readable as
    open() would have made it."""
    folder = tmp_path / "textfile_collector"
    folder.mkdir()
    path, victim = folder / "batchq.prom", folder / "victim"
    victim.write_text("precious\n")
    planted = Path(f"{path}.{os.getpid()}.{threading.get_ident()}")
    planted.symlink_to(victim)
    write_textfile(queue.backend, path)
    assert victim.read_text() == "precious\n" and planted.is_symlink()
    assert set(_families(path.read_text())) == FAMILIES and not path.is_symlink()
    umask = os.umask(0o022)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    assert sorted(p.name for p in folder.iterdir()) == sorted(["batchq.prom", "victim", planted.name])


def test_metrics_textfile_empty_is_refused(queue: Queue, db_url: str, tmp_path: Path) -> None:
    for empty in ("", " "):
        result = invoke_batchq(db_url, "metrics", "--textfile", empty)
        assert_one_line_error(result, "--textfile is empty", "batchq.prom", status=2)


def test_metrics_textfile_in_a_missing_folder_exits_1(queue: Queue, db_url: str, tmp_path: Path) -> None:
    result = invoke_batchq(db_url, "metrics", "--textfile", str(tmp_path / "missing" / "batchq.prom"))
    assert_one_line_error(result, "cannot write", "No such file or directory")


def _families(text: str) -> dict[str, dict[tuple[str, ...], float]]:
    return {
        family.name: {tuple(sample.labels.values()): sample.value for sample in family.samples}
        for family in text_string_to_metric_families(text)
    }
