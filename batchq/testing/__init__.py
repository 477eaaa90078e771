"""Helpers for testing an application that enqueues batchq jobs (docs/testing.md).

- ``inline()``: while the block runs, enqueue() runs the job at once, in-process;
- ``drain()``: run the due jobs of the test's database in-process with batchq's Worker, and get
  their outcomes;
- ``enqueued_jobs()``, ``assert_enqueued()``, ``assert_not_enqueued()``: what is in the table;
- a pytest plugin (batchq.testing.pytest_plugin, loaded by pytest itself) with the fixtures
  ``batchq_url``, ``batchq_queue``, ``batchq_drain`` and ``batchq_inline``.
"""

from __future__ import annotations

from .assertions import EnqueuedJob, assert_enqueued, assert_not_enqueued, enqueued_jobs
from .drain import DrainLimit, drain
from .inline import Inline, inline
from .outcomes import JobFailed, Outcome, Outcomes

__all__ = [
    "DrainLimit",
    "EnqueuedJob",
    "Inline",
    "JobFailed",
    "Outcome",
    "Outcomes",
    "assert_enqueued",
    "assert_not_enqueued",
    "drain",
    "enqueued_jobs",
    "inline",
]
