"""Handlers `batchq consume` runs in the tests (BATCHQ_TASK_MODULES=pubsub_handlers).

Each call is appended to ``calls`` (in-process consumers) and, with PUBSUB_LEDGER=1 (consumer
processes), written to test_ledger as n + the subscriber's offset, with the consumer's pid.
A message body is a dict: n, and optional flags that make a handler fail, sleep (on its first
call only, when it names a 'started' file to create) or say it began.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import batchq
from batchq.mq import Message

import jobs

BILLING, SHIPPING, AUDIT = 0, 1_000_000, 2_000_000  # ledger offsets, one per subscriber
calls: list[tuple[str, Any]] = []


def _record(label: str, offset: int, body: dict[str, Any]) -> None:
    calls.append((label, body))
    if os.environ.get("PUBSUB_LEDGER"):
        jobs.record({"n": body["n"] + offset})  # the jobs' ledger writer, on its own connection
    if body.get("started"):  # sleeps on its first call only: a redelivery goes through
        started = Path(body["started"])
        if started.exists():
            return
        started.write_text(str(os.getpid()))
    if body.get("sleep"):
        time.sleep(body["sleep"])


@batchq.subscriber("orders", "billing")
def bill(body: dict[str, Any]) -> None:
    """at_least_once (the default); fails while body['fail_billing'] is set."""
    _record("billing", BILLING, body)
    if body.get("fail_billing"):
        raise ValueError(f"billing refused order {body['n']}")


@batchq.subscriber("orders", "shipping", policy="at_most_once")
def ship(body: dict[str, Any]) -> None:
    """at_most_once; fails while body['fail_shipping'] is set."""
    _record("shipping", SHIPPING, body)
    if body.get("fail_shipping"):
        raise RuntimeError(f"no courier for order {body['n']}")


@batchq.subscriber("events", "audit", max_tries=3, vt="2s", pass_message=True)
def audit(message: Message) -> None:
    """Gets the Message itself; fails on its first read when body['flaky'] is set."""
    _record("audit", AUDIT, message.message)
    if message.message.get("flaky") and message.read_ct == 1:
        raise ConnectionError("flaky on the first try")
