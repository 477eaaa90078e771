"""Handlers that hang, for the consume timeout tests (BATCHQ_TASK_MODULES=stuck_handlers).

A message body is a dict: 'sleep' (seconds to hang) and an optional 'started' file each creates
as it begins.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import batchq


def _begin(body: dict[str, Any]) -> None:
    if body.get("started"):
        Path(body["started"]).write_text("started")


@batchq.subscriber("stuck", "sleeper", vt="60s")
def sleeper(body: dict[str, Any]) -> None:
    """time.sleep: a call a signal interrupts."""
    _begin(body)
    time.sleep(body["sleep"])


@batchq.subscriber("stuck", "declared", max_tries=1, vt="60s", timeout="500ms")
def declared(body: dict[str, Any]) -> None:
    """Its own timeout, without `consume --timeout`."""
    _begin(body)
    time.sleep(body["sleep"])


@batchq.subscriber("stuck", "blocked", max_tries=1, vt="60s")
def blocked(body: dict[str, Any]) -> None:
    """Stuck where no signal reaches (SIGALRM blocked): only the watchdog ends it."""
    _begin(body)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        time.sleep(body["sleep"])
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
