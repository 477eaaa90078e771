"""The middleware seam around each job's call (batchq.jobs.calls): Worker(middleware=...)."""

from __future__ import annotations

import pytest

from batchq import ConfigError, Queue
from batchq.jobs.calls import CALLED, Call, CallNext, CallOutcome, Failure
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import job_rows


def test_a_middleware_sees_each_call_and_its_outcome(queue: Queue) -> None:
    queue.enqueue("jobs:echo", {"n": 1})
    queue.enqueue("jobs:fail")
    seen: list[tuple[str, bool, str | None]] = []

    def note(call: Call, call_next: CallNext) -> CallOutcome:
        outcome = call_next(call)
        seen.append((call.job.task, outcome.failure is None, type(outcome.exception).__name__))
        return outcome

    summary = Worker(queue, RunOptions(), middleware=[note]).run()
    assert seen == [("jobs:echo", True, "NoneType"), ("jobs:fail", False, "ValueError")]
    assert (summary.succeeded, summary.errors) == (1, 1)


def test_a_middleware_may_answer_without_calling_the_task(queue: Queue) -> None:
    queue.enqueue("jobs:echo", {"n": 1})
    called: list[int] = []

    def refuse(call: Call, call_next: CallNext) -> CallOutcome:
        called.append(call.job.id)
        return CallOutcome(kind=CALLED, failure=Failure("refused by a middleware", "fp", None))

    def measured(call: Call, call_next: CallNext) -> CallOutcome:
        raise AssertionError("the layers inside an answering middleware are not run")

    summary = Worker(queue, RunOptions(), middleware=[refuse, measured]).run()
    [row] = job_rows(queue)
    assert len(called) == 1 and summary.errors == 1
    assert row["status"] == "scheduled" and "refused by a middleware" in row["last_error"]


def test_a_middleware_that_does_not_take_call_next_is_refused_before_any_job_runs(queue: Queue) -> None:
    queue.enqueue("jobs:echo", {"n": 1})

    def wrong(call: Call, nxt: CallNext) -> CallOutcome:
        return nxt(call)

    with pytest.raises(ConfigError, match="must take \\(call, call_next\\)"):
        Worker(queue, RunOptions(), middleware=[wrong]).run()  # type: ignore[list-item]
    assert job_rows(queue)[0]["status"] == "ready"
