"""Finding one job from the dashboard: by id (the primary key, in the job table and the history),
or by task and text within a bounded window of one state.

A text or task search never walks a whole table: it reads the newest SEARCH_WINDOW rows of the
chosen state through an index (``batchq_job_due (status, run_at)`` walked backward: the jobs
due, retried or failed most recently; the history through ``batchq_history_finished``), and
filters those. With a queue named, the window is that queue's: the claim index walked backward
(the last rows in claim order: the lowest priority first, then the latest due; on PostgreSQL
``batchq_job_claim`` holds the 'ready' rows, ``batchq_job_parked`` the 'scheduled', 'blocked'
and 'failed' ones, and the few 'processing' ones are read through ``batchq_job_due``), and
``batchq_history_queue`` for its history. The page says how many it read and whether older rows
were left unsearched.
Text is a case-sensitive substring of a JSON payload's first PAYLOAD_SEARCHED_BYTES bytes or of
the last error, compared as bytes (``LOCATE``, ``position``, ``instr``): ``%`` and ``_`` are
plain characters, and nothing is decoded. Only text is searched: a pickled payload (or one of
another serializer) is not, so it is never unpickled, and a search cannot read into it. The
reads are the inspection store's (batchq.stores.inspection).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backends import Backend
from ..core.job import JOB_ID_RANGE
from ..core.stored import Row, stored_text
from ..errors import ConfigError
from .params import integer

SEARCH_WINDOW = 10_000  # rows of one state a text or task search reads, newest first
SEARCH_RESULTS = 50  # matches shown, newest first
PAYLOAD_SEARCHED_BYTES = 65_536  # of each payload; the rest of a longer one is not searched
TEXT_MAX_CHARS = 200  # a search text longer than this is refused (400)
# What a search may look in: the job states, then the history of finished jobs (when kept).
SEARCH_STATES = ("failed", "ready", "scheduled", "blocked", "processing", "history")
ERROR_SHOWN_CHARS = 200


@dataclass(frozen=True)
class SearchTerms:
    job_id: int | None
    state: str
    queue: str | None
    task: str | None
    text: str | None

    @classmethod
    def from_params(cls, params: Any) -> SearchTerms:
        """The search a form sent; ConfigError (a 400) naming the field for a bad one."""
        job_id = integer(params, "id", JOB_ID_RANGE) if params.get("id", "").strip() else None
        state = params.get("state") or "failed"
        if state not in SEARCH_STATES:
            raise ConfigError(f"bad state {state!r}: use one of {', '.join(SEARCH_STATES)}")
        queue = params.get("queue") or None  # as stored: rows written by hand may hold any name
        task = params.get("task") or None
        if task is not None and len(task) > 255:
            raise ConfigError(f"bad task: {len(task)} characters; a task name has at most 255")
        text = params.get("text") or None
        if text is not None and len(text) > TEXT_MAX_CHARS:
            raise ConfigError(
                f"bad text: {len(text)} characters, more than the {TEXT_MAX_CHARS} a search takes; shorten it"
            )
        return cls(job_id, state, queue, task, text)

    @property
    def empty(self) -> bool:
        return self.job_id is None and self.task is None and self.text is None


@dataclass(frozen=True)
class Found:
    rows: list[dict[str, Any]]
    searched: int  # rows of the window read (at most SEARCH_WINDOW)
    more: bool  # the state holds older rows than the window: they were not searched
    scope: str  # what was searched, in words, for the page


def find(backend: Backend, terms: SearchTerms) -> Found:
    if terms.job_id is not None:
        return _by_id(backend, terms.job_id)
    history = terms.state == "history"
    found = backend.stores.inspection.search(
        terms.state,
        terms.queue,
        terms.task,
        terms.text,
        window=SEARCH_WINDOW,
        limit=SEARCH_RESULTS,
        payload_bytes=PAYLOAD_SEARCHED_BYTES,
    )
    rows = [_shown(row) for row in found.rows]
    size = found.size
    noun = "finished job" if history else f"{terms.state} job"
    where = (f" of queue {terms.queue}" if terms.queue is not None else "") + (
        " in the history" if history else ""
    )
    if size > SEARCH_WINDOW:
        scope = f"the newest {SEARCH_WINDOW:,} {noun}s{where}"
    else:
        scope = f"{'the only' if size == 1 else f'all {size:,}'} {noun if size == 1 else noun + 's'}{where}"
    return Found(rows, min(size, SEARCH_WINDOW), size > SEARCH_WINDOW, scope)


def _by_id(backend: Backend, job_id: int) -> Found:
    rows = [_shown(row) for row in backend.stores.inspection.search_id(job_id)]
    return Found(rows, len(rows), False, f"job {job_id} in the job table and the history")


def _shown(row: Row) -> dict[str, Any]:
    """A result row for the page: text columns as text (SQLite: a row written by hand may hold a
    BLOB), the last error cut to its first line (the exception and its message), at most
    ERROR_SHOWN_CHARS characters."""
    shown = dict(row)
    for name in ("queue", "task", "status", "locked_by", "serializer", "at_text"):
        if shown.get(name) is not None:
            shown[name] = stored_text(shown[name])
    error = shown.get("last_error")
    if error is not None:
        error = stored_text(error)
        first = error.strip().split("\n", 1)[0][:ERROR_SHOWN_CHARS]
        shown["last_error"] = first + ("…" if len(first) < len(error.strip()) else "")
    return shown
