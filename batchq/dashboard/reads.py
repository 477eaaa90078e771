"""What the dashboard reads that batchq had no function for: pages of a queue's jobs, a job's
payload as text, the workers running jobs. Read through the inspection store
(batchq.stores.inspection: plain SELECTs in autocommit); ages on the database's clock. A row
written by hand is shown as stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..backends import Backend
from ..core.stored import Row
from ..errors import ConfigError
from ..jobs.jobspec import PRIORITY_RANGE
from ..stores.inspection import ClaimHolder
from .params import integer

# The states a job row can be in, in the order an unfiltered listing walks them.
STATES = ("processing", "ready", "scheduled", "blocked", "failed")
PAGE_SIZE = 50
PAYLOAD_SHOWN_CHARS = 65_536  # a longer payload is cut, and says so


@dataclass(frozen=True)
class Cursor:
    """Where a page of jobs stops: the last row's place in the claim order of its state."""

    state: str
    priority: int
    run_at: str  # as text, as the page queries return it
    id: int

    def as_params(self) -> dict[str, str]:
        return {
            "after_state": self.state,
            "after_priority": str(self.priority),
            "after_run_at": self.run_at,
            "after_id": str(self.id),
        }

    @classmethod
    def from_params(cls, params: Any) -> Cursor | None:
        """The cursor of a next-page link; None on the first page. Bad values: ConfigError."""
        if not params.get("after_id"):
            return None
        state = params.get("after_state", "")
        if state not in STATES:
            raise ConfigError(f"bad after_state {state!r}: use one of {', '.join(STATES)}")
        # Any 64-bit value: a row written by hand (SQLite) may hold a priority beyond the range.
        again = " (a bad page link: start again from the first page)"
        priority = integer(params, "after_priority", hint=again)
        job_id = integer(params, "after_id", hint=again)
        return cls(state, priority, params.get("after_run_at", ""), job_id)


@dataclass(frozen=True)
class JobPage:
    jobs: list[Row]
    next: Cursor | None  # None: this is the last page


def job_page(
    backend: Backend,
    queue: str,
    *,
    state: str | None = None,
    task: str | None = None,
    after: Cursor | None = None,
    size: int = PAGE_SIZE,
) -> JobPage:
    """Up to ``size`` jobs of ``queue`` (in ``state``, of ``task``: None for any), in the order
    a claim takes them within each state, after ``after``. Each state is read with at most two
    index walks of at most size + 1 rows (keyset paging): the page costs the same on the last
    page of a million rows as on the first."""
    if state is not None and state not in STATES:
        raise ConfigError(f"bad state {state!r}: use one of {', '.join(STATES)}")
    states = [state] if state is not None else list(STATES)
    if after is not None:
        if after.state not in states:
            raise ConfigError(f"bad page link: state {after.state!r} is not listed here; start again")
        states = states[states.index(after.state) :]
    jobs: list[Row] = []
    for current in states:
        start = after if after is not None and after.state == current else None
        jobs += _state_rows(backend, queue, current, task, start, size + 1 - len(jobs))
        if len(jobs) > size:
            break
    if len(jobs) <= size:
        return JobPage(jobs, None)
    last = jobs[size - 1]
    return JobPage(jobs[:size], Cursor(last["status"], last["priority"], last["run_at_text"], last["id"]))


def _state_rows(
    backend: Backend, queue: str, state: str, task: str | None, after: Cursor | None, limit: int
) -> list[Row]:
    store = backend.stores.inspection
    rows: list[Row] = []
    if after is not None:  # the rest of the last row's priority, then the priorities below it
        rows = store.jobs_after(queue, state, task, after.priority, after.run_at, after.id, limit)
        below = after.priority
    else:
        below = PRIORITY_RANGE[1] + 1  # every priority
    if len(rows) < limit:
        rows += store.jobs_below(queue, state, task, below, limit - len(rows))
    return rows


@dataclass(frozen=True)
class PayloadView:
    """A payload as the dashboard shows it: never unpickled; JSON as text, escaped by the page."""

    kind: str  # none | json | pickle | bad-json | unknown
    size: int  # bytes as stored
    text: str = ""  # json: indented; bad-json: the bytes decoded with replacements
    cut: bool = False


def payload_view(backend: Backend, job_id: int) -> PayloadView | None:
    """The stored payload of job ``job_id`` for display; None if there is no such job."""
    stored = backend.stores.inspection.payload(job_id)
    if stored is None:
        return None
    data, serializer = stored.data, stored.serializer
    if data is None:
        return PayloadView("none", 0)
    if serializer == "pickle":
        return PayloadView("pickle", len(data))  # signed pickle: shown by size, never unpickled
    if serializer != "json":
        return PayloadView("unknown", len(data), f"serializer {serializer!r}")
    text = data.decode("utf-8", "replace")
    try:
        kind, text = "json", json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        kind = "bad-json"
    cut = len(text) > PAYLOAD_SHOWN_CHARS
    return PayloadView(kind, len(data), text[:PAYLOAD_SHOWN_CHARS], cut)


def workers(backend: Backend) -> list[ClaimHolder]:
    """The workers holding claimed jobs, from the processing rows (a worker that died without
    removing its registry row shows here too), each asked whether it is alive as gc-processing
    asks (never taking its lock)."""
    return backend.stores.inspection.claim_holders()
