"""A task with versions (issue 12), as three deploys of one app would define it.

VERSIONED_JOBS_VERSION (default 3) picks which deploy's code this process runs, so that two
`batchq run` processes can be an old and a new worker. Payload shapes:
  version 1: {"user": name, ...}
  version 2: {"name": name, ...}                (from_v1 renamed "user")
  version 3: {"name": name, "lang": lang, ...}  (from_v2 added "lang": "en")
"""

from __future__ import annotations

import os
from typing import Any

import batchq

VERSION = int(os.environ.get("VERSIONED_JOBS_VERSION", "3"))
RECEIVED: list[Any] = []  # what greet was called with, in this process


def from_v1(payload: dict[str, Any]) -> dict[str, Any]:
    rest = {key: value for key, value in payload.items() if key != "user"}
    return {**rest, "name": payload["user"]}  # KeyError for a payload without "user"


def from_v2(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "lang": "en"}


UPGRADES = {1: from_v1, 2: from_v2}


def steps_below(version: int) -> dict[int, Any]:
    """The upgrade steps a task of ``version`` declares."""
    return {old: UPGRADES[old] for old in range(1, version)}


@batchq.task(version=VERSION, upgrade=steps_below(VERSION))
def greet(payload: dict[str, Any]) -> None:
    """Refuses a payload not of its version's shape; with "ledger", records its n and our pid."""
    version = greet.batchq_version  # type: ignore[attr-defined]  # a test may turn it back
    needed = {1: {"user"}, 2: {"name"}, 3: {"name", "lang"}}[version]
    if not needed <= set(payload) or (version > 1 and "user" in payload):
        raise ValueError(f"not a version-{version} payload: {payload!r}")
    RECEIVED.append(payload)
    if payload.get("ledger"):
        from jobs import record

        record(payload)


def plain_handler(payload: Any) -> None:
    """A `run --handler` that declares no version: it takes every job's payload as stored."""
    RECEIVED.append(("handler", payload))
