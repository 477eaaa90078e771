"""Jobs for the README demo: `PYTHONPATH=examples BATCHQ_TASK_MODULES=demo_jobs batchq run -v`."""

import os

import batchq


def greet(payload: dict) -> None:
    print(f"[pid {os.getpid()}] hello, {payload['name']}!", flush=True)


@batchq.task(name="shout")
def shout(payload: dict) -> None:
    print(f"[pid {os.getpid()}] {payload['text'].upper()}", flush=True)


def flaky(payload: dict) -> bool:
    """Returns False (a failure) so the demo shows a retry."""
    return False
