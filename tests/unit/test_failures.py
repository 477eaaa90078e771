"""Failure fingerprints and groups (batchq.core.failures), without a database."""

from __future__ import annotations

import sys
import types

import pytest

from batchq.core.failures import fingerprint, fingerprint_of, fingerprint_of_text, group_failures, masked
from batchq.runtime.sweeps import FailedJob


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("connection to 10.0.0.7:5432 refused", "connection to N.N:N refused"),
        ("no customer 'acme-42' (id 9913)", "no customer '…' (id N)"),
        ('key "user:17" missing', "key '…' missing"),
        ("order 3fa85f64-5717-4562-b3fc-2c963f66afa6 not found", "order <hex> not found"),
        ("object at 0x7f3a2b1c", "object at <hex>"),
        ("timeout after 2.5s", "timeout after Ns"),
        ("deadbeef is a word, cafe too", "deadbeef is a word, cafe too"),  # hex needs a digit too
    ],
)
def test_masked_hides_what_varies_between_jobs(message: str, expected: str) -> None:
    assert masked(message) == expected


def _raised(func: types.FunctionType, *args: object) -> BaseException:
    try:
        func(*args)
    except BaseException as exc:
        return exc
    raise AssertionError("did not raise")


def _task_module() -> types.ModuleType:
    """A task module with a file of its own, as a user's would have."""
    module = types.ModuleType("fp_tasks")
    module.__file__ = "/srv/app/fp_tasks.py"
    code = compile(
        "def charge(n):\n    raise ValueError(f'card {n} declined')\n"
        "def refund(n):\n    raise ValueError(f'card {n} declined')\n",
        module.__file__,
        "exec",
    )
    exec(code, module.__dict__)  # noqa: S102 - test code, compiled above
    sys.modules["fp_tasks"] = module
    return module


def test_one_cause_one_fingerprint_whatever_the_values() -> None:
    tasks = _task_module()
    first = _raised(tasks.charge, 1001)
    second = _raised(tasks.charge, 2002)
    elsewhere = _raised(tasks.refund, 1001)
    prints = [fingerprint(e, "ValueError", str(e), "fp_tasks:charge") for e in (first, second, elsewhere)]
    assert prints[0] == prints[1]  # the card number is masked
    assert prints[0] != prints[2]  # the same message from another function of the task is another cause
    assert len(prints[0]) == 16
    assert fingerprint(first, "KeyError", str(first), "fp_tasks:charge") != prints[0]


def test_rows_without_a_fingerprint_are_grouped_by_their_last_error() -> None:
    assert fingerprint_of_text("ValueError: boom: 'x'\n  File ...") == fingerprint_of_text(
        "ValueError: boom: 'y'"
    )
    assert fingerprint_of_text(None) == fingerprint_of("", "")


def _failed(job_id: int, fp: str, queue: str = "default", at: str = "2026-11-23 10:00:00") -> FailedJob:
    return FailedJob(
        job_id, queue, "app:task", 3, 3, f"Error {job_id}", None, fingerprint=fp, last_error_at=at
    )


def test_groups_are_largest_first_with_their_queues_and_times() -> None:
    jobs = [
        _failed(1, "b", at="2026-11-23 10:00:00"),
        _failed(2, "a"),
        _failed(3, "b", queue="mail", at="2026-11-23 11:00:00"),
    ]
    big, small = group_failures(jobs)
    assert (big.fingerprint, big.count, big.queues, big.job_ids) == ("b", 2, ("default", "mail"), (1, 3))
    assert (big.first_seen, big.last_seen) == ("2026-11-23 10:00:00", "2026-11-23 11:00:00")
    assert (small.fingerprint, small.count) == ("a", 1)
