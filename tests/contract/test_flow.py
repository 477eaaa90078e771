"""Flow control (issue 27): a queue's rate limit and running limit, set by Queue.configure and
kept by the limited claim (batchq.stores.flow); every backend, real servers."""

from __future__ import annotations

import time
from typing import Any

import pytest

from batchq import ConfigError, Queue
from batchq.policy.flow import Rate, parse_rate
from batchq.runtime.worker import RunOptions, Worker
from batchq.stores.flow import FlowStore
from tests.support.db import job_rows, sql

WORKER = "host:1:00000000"


def claim(queue: Queue, name: str, limit: int = 10) -> Any:
    return queue.backend.stores.flow.claim(name, WORKER, "t" * 32, limit)


def starts(queue: Queue) -> int:
    return int(sql(queue, "SELECT COUNT(*) FROM batchq_queue_start")[0][0])


@pytest.mark.parametrize(
    "text, rate",
    [
        ("100/m", Rate(100, 60.0)),
        ("10/s", Rate(10, 1.0)),
        ("5 / 30s", Rate(5, 30.0)),
        ("2/1h30m", Rate(2, 5400.0)),
    ],
)
def test_rates_read_as_a_count_per_period(text: str, rate: Rate) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize(
    "settings",
    [
        {"rate": "abc"},
        {"rate": "0/m"},
        {"rate": "-1/m"},
        {"rate": "5/xyz"},
        {"rate": "5/0s"},
        {"rate": "99999999999/m"},
        {"max_running": 2**31},
        {"rate": 100},
        {"max_running": -1},
        {"max_running": 0},
        {"max_running": True},
        {"max_running": "3"},
        {"rate": "10/s", "max_running": 0},  # one bad value: the good one is not written either
    ],
)
def test_bad_limits_are_refused_before_anything_is_written(queue: Queue, settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        queue.configure("q", **settings)
    assert queue.backend.stores.settings.job_queues() == {}


def test_limits_are_stored_shown_and_lifted(queue: Queue) -> None:
    queue.configure("q", rate="100/m", max_running=4)
    settings = queue.backend.stores.settings.job_queues()["q"]
    assert (settings.rate, settings.max_running) == (Rate(100, 60.0), 4)
    assert settings.settings() == {"rate": "100/m", "max_running": 4}
    queue.configure("q", rate=None)
    settings = queue.backend.stores.settings.job_queues()["q"]
    assert (settings.rate, settings.max_running) == (None, 4)
    queue.configure("q", max_running=None)
    assert queue.backend.stores.flow.limits() == {}


def test_a_rate_lets_n_jobs_start_per_period_and_holds_the_rest_uncounted(queue: Queue) -> None:
    queue.configure("q", rate="3/m")
    ids = [queue.enqueue("jobs:noop", {"i": i}, queue="q") for i in range(5)]
    first = claim(queue, "q")
    assert [job.id for job in first.jobs] == ids[:3]
    assert starts(queue) == 3
    held = claim(queue, "q")
    assert held.jobs == [] and held.held
    assert 55 < held.wait <= 60  # until the first start leaves its minute, on the server's clock
    waiting = [row for row in job_rows(queue) if row["status"] == "ready"]
    assert [row["id"] for row in waiting] == ids[3:]
    assert all(row["error_count"] == 0 for row in waiting)  # held back is no error


def test_a_claim_of_an_empty_limited_queue_is_not_held(queue: Queue) -> None:
    queue.configure("q", rate="1/m")
    assert claim(queue, "q").jobs == []
    assert not claim(queue, "q").held  # nothing is due: the worker is idle, not held back


def test_starts_leave_the_window_after_the_period(queue: Queue) -> None:
    queue.configure("q", rate="2/1s")
    for i in range(3):
        queue.enqueue("jobs:noop", {"i": i}, queue="q")
    assert len(claim(queue, "q").jobs) == 2
    held = claim(queue, "q")
    assert held.held and held.wait is not None and held.wait <= 1.0
    time.sleep(held.wait + 0.05)
    assert len(claim(queue, "q").jobs) == 1
    assert starts(queue) <= 2  # the claim deleted the starts that left the window


def test_max_running_counts_the_running_jobs_of_the_queue(queue: Queue) -> None:
    queue.configure("q", max_running=2)
    for i in range(4):
        queue.enqueue("jobs:noop", {"i": i}, queue="q")
    assert len(claim(queue, "q", limit=1).jobs) == 1
    assert len(claim(queue, "q", limit=5).jobs) == 1  # one place left
    held = claim(queue, "q")
    assert held.held and held.wait is None  # a job's end frees a place: no time to tell
    assert starts(queue) == 0  # no rate: no starts recorded
    [running, _] = [row["id"] for row in job_rows(queue) if row["status"] == "processing"]
    sql(queue, f"DELETE FROM batchq_job WHERE id = {running}")  # it succeeded
    assert len(claim(queue, "q").jobs) == 1


def test_lifting_a_rate_forgets_its_starts(queue: Queue) -> None:
    queue.configure("q", rate="1/h")
    queue.enqueue_many("jobs:noop", [{"i": 0}, {"i": 1}], queue="q")
    assert len(claim(queue, "q").jobs) == 1
    assert claim(queue, "q").held
    queue.configure("q", rate=None)
    assert starts(queue) == 0
    assert len(claim(queue, "q").jobs) == 1


def test_a_worker_sleeps_through_the_rate_and_runs_every_job(queue: Queue) -> None:
    queue.configure("q", rate="2/s")
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(5)], queue="q")
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(3)], queue="free")
    began = time.monotonic()
    summary = Worker(queue, RunOptions(queues=("q", "free"), max_seconds=30)).run()
    assert summary.succeeded == 8 and summary.errors == 0
    assert time.monotonic() - began >= 1.0  # 5 jobs at 2 a second: the fifth starts a second or more in
    assert job_rows(queue) == []


def test_explain_says_when_the_next_job_may_start(queue: Queue) -> None:
    queue.configure("q", rate="1/m")
    queue.enqueue("jobs:noop", queue="q")
    second = queue.enqueue("jobs:noop", queue="q")
    assert len(claim(queue, "q").jobs) == 1
    found = queue.explain(second)
    assert found.state == "waiting" and found.held_by == "rate"
    assert "rate limit 1/m is reached: the next job may start at" in found.summary
    assert found.next_start_at is not None
    assert any("1 started in the last" in line for line in found.details)


def test_explain_names_a_full_running_limit(queue: Queue) -> None:
    queue.configure("q", max_running=1)
    queue.enqueue("jobs:noop", queue="q")
    second = queue.enqueue("jobs:noop", queue="q")
    assert len(claim(queue, "q").jobs) == 1
    found = queue.explain(second)
    assert found.held_by == "max_running"
    assert "runs 1 job, its max_running 1" in found.summary


def test_explain_of_a_queue_without_limits_says_nothing_of_them(queue: Queue) -> None:
    job = queue.enqueue("jobs:noop")
    found = queue.explain(job)
    assert found.held_by is None and not any("flow limits" in line for line in found.details)


def test_only_the_queues_with_limits_go_through_the_limited_claim(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queues without limits pay nothing: the worker claims them with the plain claim."""
    limited: list[str] = []
    real_claim = FlowStore.claim

    def noted(self: FlowStore, name: str, *args: Any) -> Any:
        limited.append(name)
        return real_claim(self, name, *args)

    monkeypatch.setattr(FlowStore, "claim", noted)
    queue.configure("capped", max_running=5)
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(3)])
    summary = Worker(queue, RunOptions(queues=("default",))).run()
    assert summary.succeeded == 3 and limited == []
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(2)], queue="capped")
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(2)])
    summary = Worker(queue, RunOptions(queues=("default", "capped"))).run()
    assert summary.succeeded == 4 and set(limited) == {"capped"}


def test_a_worker_held_back_by_a_long_period_keeps_to_its_max_seconds(queue: Queue) -> None:
    queue.configure("q", rate="1/h")
    queue.enqueue_many("jobs:noop", [{"i": i} for i in range(2)], queue="q")
    began = time.monotonic()
    summary = Worker(queue, RunOptions(queues=("q",), max_seconds=1.0)).run()
    assert summary.succeeded == 1  # the second waits for the next hour
    assert time.monotonic() - began < 5.0  # not an hour's sleep, nor a held pause's longest
