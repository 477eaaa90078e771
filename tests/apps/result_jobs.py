"""Tasks of the results tests (issue 30): what they return, how they fail, and a task that keeps
its results by itself. Importable as `result_jobs` (BATCHQ_TASK_MODULES=result_jobs)."""

from __future__ import annotations

import time
from typing import Any

from batchq import task


def returns(payload: Any = None) -> Any:
    """Returns its payload."""
    return payload


@task(keep_result="1h")
def kept(payload: Any = None) -> Any:
    """Returns its payload; its jobs keep their results for an hour unless enqueue says."""
    return payload


def raises(message: str = "bad input") -> None:
    raise ValueError(message)


def returns_false(payload: Any = None) -> bool:
    return False


def sleeps_then_returns(payload: dict[str, Any]) -> Any:
    time.sleep(payload["sleep"])
    return payload["value"]


def records_then_returns(payload: dict[str, Any]) -> Any:
    """Writes its number into test_ledger (jobs.record: one row per run), then returns what
    ``returns`` names: "set" (a value JSON cannot carry), else n * 10."""
    from jobs import record

    record(payload)
    return {1, 2} if payload.get("returns") == "set" else payload["n"] * 10


def returns_a_set(payload: Any = None) -> set[int]:
    """A value JSON cannot carry."""
    return {1, 2}
