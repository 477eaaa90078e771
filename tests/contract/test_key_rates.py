"""Per-key rate limits (issue 27): enqueue(rate_key=..., rate=...), checked by the worker as each
job starts (batchq.stores.flow.FlowStore.start_keyed, batchq.jobs.calls.KeyRates); every backend,
real servers."""

from __future__ import annotations

from typing import Any

import pytest

from batchq import ConfigError, Queue
from batchq.runtime.worker import RunOptions, Worker
from batchq.testing import drain
from tests.support.db import job_rows, sql

WORKER = "host:1:00000000"
TOKEN = "k" * 32


def claim_all(queue: Queue, name: str = "default") -> list[Any]:
    return queue.backend.stores.jobs.claim(name, WORKER, TOKEN, 100).jobs


def key_starts(queue: Queue, key: str = "api") -> int:
    return int(sql(queue, f"SELECT COUNT(*) FROM batchq_rate_key_start WHERE rate_key = '{key}'")[0][0])


def test_a_claimed_job_carries_its_key_and_its_row_its_rate(queue: Queue) -> None:
    queue.enqueue("jobs:noop", rate_key="api:stripe", rate="100/m")
    queue.enqueue("jobs:noop")
    keyed, plain = claim_all(queue)
    assert (keyed.rate_key, plain.rate_key) == ("api:stripe", None)
    rates = sql(queue, "SELECT rate_limit, rate_period FROM batchq_job ORDER BY id")
    assert [(r[0], None if r[1] is None else float(r[1])) for r in rates] == [(100, 60.0), (None, None)]


def test_n_jobs_of_a_key_start_per_period_the_rest_go_back_in_slots(queue: Queue) -> None:
    queue.enqueue_many("jobs:noop", [{}] * 7, rate_key="api", rate="2/1h")
    flow = queue.backend.stores.flow
    results = [flow.start_keyed(job, "api") for job in claim_all(queue)]
    assert [r.started for r in results] == [True, True, False, False, False, False, False]
    assert key_starts(queue) == 2
    waits = [r.wait for r in results[2:]]
    assert all(r.held for r in results[2:])
    # at most 2 a slot, a period apart: the first slot when the window lets a start in (~1h)
    first = waits[0]
    assert first == pytest.approx(3600, abs=5)
    expected = [first, first, first + 3600, first + 3600, first + 7200]
    assert waits == pytest.approx(expected, abs=0.05)
    rows = job_rows(queue)
    assert [r["status"] for r in rows] == ["processing"] * 2 + ["scheduled"] * 5
    assert {r["error_count"] for r in rows} == {0}  # held back, not counted
    assert {r["locked_by"] for r in rows[2:]} == {None}


def test_keys_are_counted_apart(queue: Queue) -> None:
    queue.enqueue("jobs:noop", rate_key="a", rate="1/h")
    queue.enqueue("jobs:noop", rate_key="b", rate="1/h")
    flow = queue.backend.stores.flow
    assert [flow.start_keyed(job, job.rate_key).started for job in claim_all(queue)] == [
        True,
        True,
    ]


def test_starts_leave_the_window_after_the_period(queue: Queue) -> None:
    queue.enqueue_many("jobs:noop", [{}] * 2, rate_key="api", rate="1/0.2s")
    first, second = claim_all(queue)
    flow = queue.backend.stores.flow
    assert flow.start_keyed(first, "api").started
    soon = flow.start_keyed(second, "api")
    assert not soon.started and not soon.held and 0 < soon.wait <= 0.2  # the worker waits for it
    assert [r["status"] for r in job_rows(queue)] == ["processing"] * 2  # nothing written for it
    held = flow.start_keyed(second, "api", soon=False)
    assert held.held and held.wait <= 0.2


def test_a_check_of_a_job_taken_back_does_nothing(queue: Queue) -> None:
    queue.enqueue("jobs:noop", rate_key="api", rate="1/h")
    [job] = claim_all(queue)
    sql(queue, "UPDATE batchq_job SET claim_token = NULL, status = 'ready'")  # as a sweep would
    assert queue.backend.stores.flow.start_keyed(job, "api").lost
    assert key_starts(queue) == 0


def test_a_worker_runs_the_key_s_jobs_within_its_rate_and_holds_the_rest_uncounted(queue: Queue) -> None:
    queue.enqueue_many("jobs:noop", [{}] * 3, rate_key="api", rate="2/h")
    plain = queue.enqueue("jobs:noop")
    summary = Worker(queue, RunOptions()).run()
    assert (summary.succeeded, summary.errors, summary.held) == (3, 0, 1)
    [held] = job_rows(queue)
    assert (held["status"], held["error_count"]) == ("scheduled", 0)
    assert plain not in {r["id"] for r in job_rows(queue)}


def test_drain_runs_what_the_rate_allows_and_leaves_the_rest_for_later(queue: Queue) -> None:
    queue.enqueue_many("jobs:noop", [{}] * 3, rate_key="api", rate="1/h")
    outcomes = drain(queue)
    assert len(outcomes) == 1 and outcomes[0].succeeded
    assert sorted(r["status"] for r in job_rows(queue)) == ["scheduled", "scheduled"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"rate_key": "api"}, "rate_key needs a rate"),
        ({"rate": "10/m"}, "rate needs a rate_key"),
        ({"rate_key": "api", "rate": "0/m"}, "bad rate"),
        ({"rate_key": "api", "rate": "ten a minute"}, "bad rate"),
        ({"rate_key": "", "rate": "10/m"}, "bad rate_key"),
        ({"rate_key": "k" * 256, "rate": "10/m"}, "bad rate_key"),
        ({"rate_key": "a\x00b", "rate": "10/m"}, "bad rate_key"),
        ({"rate_key": 42, "rate": "10/m"}, "bad rate_key"),
        ({"rate_key": "\udcff", "rate": "10/m"}, "not valid UTF-8"),
    ],
)
def test_bad_key_rates_are_refused_before_anything_is_written(
    queue: Queue, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        queue.enqueue("jobs:noop", **options)
    with pytest.raises(ConfigError, match=message):
        queue.enqueue_many("jobs:noop", [{}], **options)
    assert job_rows(queue) == []


def test_a_hostile_key_is_stored_and_counted_as_given(queue: Queue) -> None:
    key = "k'; DROP TABLE batchq_job; -- ü 🙂" + "x" * 200
    queue.enqueue_many("jobs:noop", [{}] * 2, rate_key=key, rate="1/h")
    summary = Worker(queue, RunOptions()).run()
    assert (summary.succeeded, summary.held) == (1, 1)
    assert sql(queue, "SELECT rate_key FROM batchq_rate_key")[0][0] == key


FAR_FUTURE = {"postgresql": "infinity", "mysql": "2099-01-01 00:00:00", "sqlite": "zzz"}


def test_a_start_written_by_hand_in_the_future_never_holds_a_key_back(queue: Queue) -> None:
    start = FAR_FUTURE[queue.backend.dialect]
    sql(queue, f"INSERT INTO batchq_rate_key_start (rate_key, started_at) VALUES ('api', '{start}')")
    queue.enqueue("jobs:noop", rate_key="api", rate="1/h")
    summary = Worker(queue, RunOptions()).run()
    assert (summary.succeeded, summary.held) == (1, 0)


def test_a_slot_that_is_no_time_or_long_past_is_no_slot(queue: Queue) -> None:
    slot = {"postgresql": "infinity", "mysql": "1970-01-02 00:00:00", "sqlite": "zzz"}[queue.backend.dialect]
    sql(queue, f"INSERT INTO batchq_rate_key (rate_key, next_slot_at, slot_fill) VALUES ('api', '{slot}', 7)")
    queue.enqueue_many("jobs:noop", [{}] * 2, rate_key="api", rate="1/h")
    flow = queue.backend.stores.flow
    started, held = (flow.start_keyed(job, "api") for job in claim_all(queue))
    assert started.started and held.held and held.wait == pytest.approx(3600, abs=5)


def test_a_job_row_whose_rate_is_no_rate_is_held_to_one_a_second(queue: Queue) -> None:
    queue.enqueue_many("jobs:noop", [{}] * 2, rate_key="api", rate="5/h")
    value = "'abc'" if queue.backend.dialect == "sqlite" else "0"
    sql(queue, f"UPDATE batchq_job SET rate_limit = {value}, rate_period = -1")
    summary = Worker(queue, RunOptions()).run()
    assert (summary.succeeded, summary.held) == (1, 1)  # 1 a second: never no limit
