"""Job.from_row: the job a claim's row makes is a Job like any other, though it is built without
the frozen dataclass's __init__ (for speed: a claim builds one per row)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from batchq.core.job import Job

TOKEN = "t" * 32
# id, queue, task, payload, serializer, priority, error_count, max_errors, timeout_seconds,
# task_version, backoff, keep_result, rate_key, then run_at (SQLite's claim returns it last).
ROW = (7, "default", "jobs:noop", b"{}", "json", 5, 1, 10, 30.0, 2, 4.5, 60, "key", "2026-01-01 00:00:00.000")


def built() -> Job:
    return Job(7, "default", "jobs:noop", b"{}", "json", 5, 1, 10, 30.0, TOKEN, 2, 4.5, 60, "key")


def test_a_claimed_job_is_the_job_its_fields_make() -> None:
    job = Job.from_row(ROW, TOKEN)
    assert type(job) is Job
    assert job == built() and hash(job) == hash(built()) and repr(job) == repr(built())
    every_field = {field.name: getattr(job, field.name) for field in dataclasses.fields(Job)}
    assert every_field == dataclasses.asdict(built())  # a field from_row forgot would raise here
    assert job.schedule is None and job.slot is None and job.attempt == 2


def test_a_claimed_job_is_frozen_and_copies_as_any_job() -> None:
    job = Job.from_row(ROW, TOKEN)
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.id = 8  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del job.task  # type: ignore[misc]
    assert not hasattr(job, "__dict__")
    assert dataclasses.replace(job, schedule="nightly").schedule == "nightly"
    assert copy.copy(job) == job and pickle.loads(pickle.dumps(job)) == job


def test_a_subclass_of_job_is_built_by_its_own_init() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Mine(Job):
        extra: int = 3

    job = Mine.from_row(ROW, TOKEN)
    assert type(job) is Mine and job.extra == 3 and job.id == 7 and job.claim_token == TOKEN
