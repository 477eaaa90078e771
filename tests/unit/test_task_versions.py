"""@task(version=..., upgrade=...) is checked where the task is defined (issue 12)."""

from __future__ import annotations

from typing import Any

import pytest

import batchq
from batchq import ConfigError
from batchq.errors import PayloadError
from batchq.jobs.tasks import UpgradeFailed, stored_version, task_version, upgrade_payload


def step(payload: Any) -> Any:
    return payload


async def async_step(payload: Any) -> Any:
    return payload


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"version": 0}, "bad version 0 for a task: use a whole number from 1 to 65535"),
        ({"version": 65536}, "bad version 65536"),
        ({"version": True}, "bad version True"),
        ({"version": "2"}, "bad version '2'"),
        (
            {"version": 2},
            r"a task of version 2 has no upgrade from version 1 to 2: add upgrade=\{1: \.\.\.\}",
        ),
        ({"version": 3, "upgrade": {1: step}}, "a task of version 3 has no upgrade from version 2 to 3"),
        ({"version": 3, "upgrade": {2: step}}, "no upgrade from version 1 to 2"),
        ({"version": 2, "upgrade": {1: step, 2: step}}, "bad upgrade step 2 for a task of version 2"),
        ({"version": 2, "upgrade": {0: step, 1: step}}, "bad upgrade step 0"),
        ({"version": 2, "upgrade": {"1": step}}, "bad upgrade step '1'"),
        ({"upgrade": {1: step}}, r"a version-1 task has none: raise its version first"),
        ({"version": 2, "upgrade": [step]}, "bad upgrade .* use a dict"),
        (
            {"version": 2, "upgrade": {1: "module:from_v1"}},
            "bad upgrade step 1: 'module:from_v1' is not a plain",
        ),
        ({"version": 2, "upgrade": {1: async_step}}, "bad upgrade step 1: .* is not a plain function"),
        ({"version": 2, "upgrade": {1: dict}}, "bad upgrade step 1"),
    ],
)
def test_a_bad_version_or_upgrade_is_refused_where_the_task_is_defined(
    declared: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        batchq.task(**declared)


def double(payload: int) -> int:
    return payload * 2


def add_one(payload: int) -> int:
    return payload + 1


def broken(payload: Any) -> Any:
    raise LookupError("no such field")


@batchq.task(version=3, upgrade={2: add_one, 1: double})
def chained(payload: int) -> None: ...


@batchq.task(version=2, upgrade={1: broken})
def breaking(payload: Any) -> None: ...


def test_a_task_declares_its_version_and_its_steps_run_in_order() -> None:
    assert task_version(chained) == 3 and task_version(step) == 1
    assert upgrade_payload(chained, 5, 1) == 11  # (5 * 2) + 1: 1 -> 2 first
    assert upgrade_payload(chained, 5, 2) == 6
    assert upgrade_payload(chained, 5, 3) == 5


def test_a_failing_step_is_named_and_keeps_its_error() -> None:
    with pytest.raises(UpgradeFailed, match=r"from version 1 to 2 \(broken\) failed") as caught:
        upgrade_payload(breaking, {}, 1)
    assert isinstance(caught.value.__cause__, LookupError)


@pytest.mark.parametrize(("stored", "version"), [(None, 1), (1, 1), (7, 7), (2.0, 2), (65535, 65535)])
def test_a_stored_version_is_read_as_a_whole_number(stored: Any, version: int) -> None:
    assert stored_version(stored) == version


@pytest.mark.parametrize("stored", [0, -3, 1.5, "2", b"2", True, 65536, 10**12])
def test_a_stored_version_that_is_none_is_refused_with_the_reason(stored: Any) -> None:
    with pytest.raises(PayloadError, match="is not a version"):
        stored_version(stored)
