"""`batchq metrics` on every backend: the values per queue, locks held, and queue names that try
to break the text format (issue 13). The output is read back with prometheus_client's parser."""

from __future__ import annotations

import time
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from batchq import Queue
from batchq.ops.metrics import STATES, read_queues, render
from tests.support.db import sql
from tests.support.rows import dead_worker, processing, write_row

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
    # Message queues (issue 28; tests/contract/test_mq_metrics.py and the like check their values).
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


def scrape(queue: Queue) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """The metrics as {family: {labels: value}}, parsed back from the text format."""
    families: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(render(queue.backend).decode()):
        samples = families.setdefault(family.name, {})
        for sample in family.samples:
            samples[tuple(sorted(sample.labels.items()))] = sample.value
    return families


def per_queue(families: dict[str, Any], family: str, queue_name: str, **labels: str) -> float:
    return families[family][tuple(sorted({"queue": queue_name, **labels}.items()))]


def jobs_by_state(families: dict[str, Any], queue_name: str) -> dict[str, float]:
    return {s: per_queue(families, "batchq_jobs", queue_name, state=s) for s in STATES}


def set_queue(queue: Queue, job_id: int, name: str) -> None:
    param = "?" if queue.backend.dialect == "sqlite" else "%s"
    sql(queue, f"UPDATE batchq_job SET queue = {param} WHERE id = {param}", (name, job_id))


def test_values_per_queue(queue: Queue) -> None:
    queue.enqueue("jobs:noop", queue="mail")
    old = write_row(queue)  # due an hour ago
    set_queue(queue, old, "mail")
    queue.enqueue("jobs:noop", queue="mail", delay="1h")
    write_row(queue, status="scheduled")  # default: due, not yet promoted: ready
    write_row(queue, status="failed")
    write_row(queue, **processing(queue, dead_worker()))  # claimed an hour ago
    queue.enqueue("jobs:noop")
    queue.enqueue("jobs:noop", concurrency_key="k")  # due, waiting for a slot
    queue.pause("idle")  # a queue with no jobs, known from batchq_queue

    m = scrape(queue)
    assert set(m) == FAMILIES
    states = {name: jobs_by_state(m, name) for name in ("mail", "default", "idle")}
    assert states == {
        "mail": {"ready": 2, "delayed": 1, "blocked": 0, "processing": 0, "failed": 0},
        "default": {"ready": 2, "delayed": 0, "blocked": 1, "processing": 1, "failed": 1},
        "idle": {"ready": 0, "delayed": 0, "blocked": 0, "processing": 0, "failed": 0},
    }
    assert per_queue(m, "batchq_queue_paused", "idle") == 1
    assert per_queue(m, "batchq_queue_paused", "mail") == 0
    assert per_queue(m, "batchq_oldest_due_job_age_seconds", "mail") == pytest.approx(3600, abs=60)
    assert per_queue(m, "batchq_oldest_due_job_age_seconds", "idle") == 0
    assert per_queue(m, "batchq_oldest_processing_job_age_seconds", "default") == pytest.approx(3600, abs=60)
    assert per_queue(m, "batchq_oldest_processing_job_age_seconds", "mail") == 0
    assert m["batchq_locks_held"] == {(): 0}
    queue.resume("idle")
    assert per_queue(scrape(queue), "batchq_queue_paused", "idle") == 0


def test_the_ready_age_is_the_oldest_due_jobs_not_a_delayed_ones(queue: Queue) -> None:
    queue.enqueue("jobs:noop", delay="1h")
    [only] = read_queues(queue.backend)
    assert (only.ready, only.delayed, only.oldest_due_seconds) == (0, 1, 0)
    queue.enqueue("jobs:noop")
    [only] = read_queues(queue.backend)
    assert only.ready == 1 and 0 <= only.oldest_due_seconds < 60


def test_locks_held_count_held_slots_not_free_or_expired_ones(queue: Queue) -> None:
    lock = queue.lock("nightly", ttl="5m")
    assert lock.acquire()
    slots = [queue.semaphore("smtp", 3, ttl="5m") for _ in range(2)]
    assert all(slot.acquire() for slot in slots)
    short = queue.lock("brief", ttl=0.05)
    assert short.acquire()
    released = queue.lock("done", ttl="5m")
    assert released.acquire() and released.release()
    time.sleep(0.2)  # "brief" expires on the database's clock
    assert scrape(queue)["batchq_locks_held"] == {(): 3}


HOSTILE_NAMES = [
    'quote"d',
    "back\\slash",
    "new\nline",
    'x"} 1\nbatchq_injected 1\n# HELP',
    'brace{a="b"},c=d',
    "émoji 🚀 ünïcode",
    "",
]


def test_hostile_queue_names_stay_label_values(queue: Queue) -> None:
    for name in HOSTILE_NAMES:
        set_queue(queue, write_row(queue), name)
    m = scrape(queue)
    assert set(m) == FAMILIES  # nothing injected
    assert {dict(labels)["queue"] for labels in m["batchq_jobs"]} == set(HOSTILE_NAMES)
    assert all(jobs_by_state(m, name)["ready"] == 1 for name in HOSTILE_NAMES)


def test_workers_by_state_and_schedules_next_slot(queue: Queue, db_url: str) -> None:
    """What the alerting kit's no-worker and schedule rules read (deploy/prometheus)."""
    import os
    import socket

    from batchq.ops.registry import Registration

    live = Queue(db_url)
    name = f"{socket.gethostname()}:{os.getpid()}:feed0002"
    live.backend.liveness.hold(name)
    try:
        Registration(live.backend, name, ["default"]).register()
        Registration(queue.backend, dead_worker(), ["default"]).register()
        schedule = queue.schedule("nightly", "0 3 * * *", "jobs:noop")
        queue.schedule("off", "0 4 * * *", "jobs:noop")
        queue.schedules.pause("off")
        families = scrape(queue)
        workers = {dict(labels)["state"]: value for labels, value in families["batchq_workers"].items()}
        assert workers == {"running": 1, "stopping": 0, "gone": 1, "unknown": 0}
        slots = families["batchq_schedule_next_run_timestamp_seconds"]
        assert schedule.next_exec is not None
        assert slots == {(("schedule", "nightly"),): schedule.next_exec.timestamp()}  # enabled ones only
    finally:
        live.close()
