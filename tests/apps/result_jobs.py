"""Tasks of the results tests (issue 30): what they return, how they fail, and a task that keeps
its results by itself. Importable as `result_jobs` (BATCHQ_TASK_MODULES=result_jobs)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
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


def returns_a_set(payload: Any = None) -> set[int]:
    return {1, 2}


def sleeps(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def returns_then_dies(ledger: str) -> str:
    """The first call writes a line to ``ledger`` and is SIGKILLed after the task returned: its
    worker is killed before the claim that would commit its end (a later call just returns)."""
    path = Path(ledger)
    first = not path.exists()
    with path.open("a") as f:
        f.write(f"{os.getpid()}\n")
    if first:
        # Dies between this return and its commit: a thread kills the process once the worker
        # is past the call, before the next claim commits.
        import threading

        def kill() -> None:
            time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=kill, daemon=True).start()
        time.sleep(0.01)  # the return happens; the kill lands while the worker records it
    return "done"
