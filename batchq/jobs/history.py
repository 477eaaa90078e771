"""Job history and resource accounting (issue 12).

A worker measures every job it runs (``Meter``): wall time on the monotonic clock, the CPU time
(user + system) of the thread that runs it, and memory as the process's high-water mark (see
``Usage``). A failed try's figures go on the job row (gc-error shows them). A finished job of a
queue that keeps history (``Queue.configure(queue, keep_for=...)``), or of a worker run with
``--keep``, is copied into ``batchq_history`` in the transaction that deletes it (the next
claim's), with its figures and its JSON result (``Kept``); a job that runs out of tries is copied
as failed in the transaction of its last ``job_error``. ``read_history`` and ``prune`` are what
``Queue.history`` and ``Queue.prune`` run.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ..backends import Backend, Row, stored_count, stored_seconds, stored_text, stored_time
from ..core.config import format_duration
from ..core.job import Kept
from ..core.serializers import dumps
from ..errors import PayloadError

try:
    import resource
except ImportError:  # not on Windows: wall time only
    resource = None  # type: ignore[assignment]

# A result's JSON is kept up to this size (it travels in the claim statement); a larger one is
# replaced by a note saying how large it was.
RESULT_MAX_BYTES = 64 * 1024
REPR_MAX_CHARS = 1000  # a result that is not JSON is kept as its repr, cut to this length
NOTE_MAX_CHARS = 255  # the result_note column
# The note of a result kept pickled and signed: its JSON is the base64 of signature + pickle.
PICKLED_NOTE = "pickled (signed): read it with Queue.result and the secret"
# Records per prune statement, each statement its own short transaction (the reasons are in
# prune()'s docstring).
PRUNE_BATCH = 1000
# The measurements of finished jobs travel in the claim as one JSON array; a batch whose array is
# larger (up to 1,000 jobs of 64 KiB results) is finished in pieces of this size before the claim,
# so no statement approaches MySQL's max_allowed_packet.
KEPT_STATEMENT_BYTES = 1024 * 1024

_RUSAGE_WHO = getattr(resource, "RUSAGE_THREAD", getattr(resource, "RUSAGE_SELF", 0))
_MAXRSS_BYTES = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
# ASCII only: no lone surrogate or NUL can reach a text column, on any backend.
_RESULT_JSON = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Usage:
    """What one try of a job cost, measured in its worker.

    ``cpu_seconds`` is user + system time of the thread that ran the job (``RUSAGE_THREAD`` on
    Linux; elsewhere the whole process's, ``RUSAGE_SELF``); threads the job starts are not
    counted. ``memory_peak_bytes`` is the worker process's high-water mark of resident memory
    (``ru_maxrss``) when the job ended: it never goes down, so it covers the jobs before this one
    in the same process too. ``memory_growth_bytes`` is how much this job raised that mark: 0
    when it stayed under an earlier peak, however much it allocated.
    """

    wall_seconds: float
    cpu_seconds: float | None = None
    memory_peak_bytes: int | None = None
    memory_growth_bytes: int | None = None

    def row_params(self) -> dict[str, Any]:
        """The parameters of a counted try (JobStore.error)."""
        return {
            "wall": self.wall_seconds,
            "cpu": self.cpu_seconds,
            "peak": self.memory_peak_bytes,
            "growth": self.memory_growth_bytes,
        }


class Meter:
    """Started just before a job's callable, stopped just after: one getrusage() and one clock
    read at each end. A success that is kept reads its figures as a ``Kept`` directly (``kept``),
    with no ``Usage`` in between: this runs for every job of a worker that keeps history, where
    each microsecond is about 2 % of a no-op job's cost in batch mode (bench/history_inprocess.py,
    the "measured" row)."""

    __slots__ = ("_wall_ns", "_start")

    def __init__(self) -> None:
        self._start = _getrusage()
        self._wall_ns = time.monotonic_ns()

    def kept(self, job_id: int, value: Any, pickle_secret: bytes | None = None) -> Kept:
        """The finished job's record for the history: its figures and what it returned (with
        ``pickle_secret``, a value JSON cannot carry is pickled and signed: encode_result)."""
        wall_ns = time.monotonic_ns() - self._wall_ns
        start, end = self._start, _getrusage()
        result, note = (None, None) if value is None else encode_result(value, pickle_secret)
        if start is None or end is None:
            return Kept(job_id, wall_ns, None, None, None, result, note)
        # Neither comes out negative: a thread's CPU time and a process's high-water mark never
        # go down.
        cpu = end.ru_utime + end.ru_stime - start.ru_utime - start.ru_stime
        peak, growth = end.ru_maxrss * _MAXRSS_BYTES, (end.ru_maxrss - start.ru_maxrss) * _MAXRSS_BYTES
        return Kept(job_id, wall_ns, round(cpu * 1e6), peak, growth, result, note)

    def stop(self) -> Usage:
        """A failed try's figures, for its job row."""
        figures = self.kept(0, None)
        cpu = None if figures.cpu_us is None else figures.cpu_us / 1e6
        return Usage(figures.wall_ns / 1e9, cpu, figures.peak, figures.growth)


def _getrusage() -> Any:
    return None if resource is None else resource.getrusage(_RUSAGE_WHO)


def encode_result(value: Any, pickle_secret: bytes | None = None) -> tuple[str | None, str | None]:
    """A task's return value as stored: (its JSON text, None); a value JSON cannot carry as the
    JSON string of its repr, with a note; one larger than RESULT_MAX_BYTES as (None, a note).
    With ``pickle_secret`` (a job whose payload was pickled, so its enqueuer opted in and the
    worker has the secret), a value JSON cannot carry is pickled and signed as payloads are
    (batchq.core.serializers) and kept as the JSON string of its base64, with the note PICKLED_NOTE.
    Never raises: the job succeeded, whatever it returned."""
    if value is None:
        return None, None
    try:
        return _fitting(_RESULT_JSON.encode(value), None)
    except (TypeError, ValueError, RecursionError):
        pass
    kind = _type_name(value)
    if pickle_secret:
        try:
            signed = dumps(value, "pickle", pickle_secret)
        except (PayloadError, RecursionError):
            pass  # not picklable either: its repr, as without a secret
        else:
            text = _RESULT_JSON.encode(base64.b64encode(signed or b"").decode("ascii"))
            return _fitting(text, PICKLED_NOTE)
    try:
        shown = repr(value)[:REPR_MAX_CHARS]
    except BaseException:
        return None, _note(f"not JSON ({kind}), and its repr() raised: not stored")
    return _fitting(_RESULT_JSON.encode(shown), _note(f"not JSON ({kind}): its repr is stored"))


def _fitting(text: str, note: str | None) -> tuple[str | None, str | None]:
    if len(text) > RESULT_MAX_BYTES:
        return None, _note(f"too large to keep: {len(text):,} bytes of JSON, more than {RESULT_MAX_BYTES:,}")
    return text, note


def _type_name(value: Any) -> str:
    try:
        return ascii(type(value).__qualname__)[1:-1]
    except BaseException:
        return "an object"


def _note(text: str) -> str:
    return text[:NOTE_MAX_CHARS]


def format_usage(
    wall: float | None, cpu: float | None, peak: int | None, growth: int | None, worker: str | None = None
) -> str:
    """A try's figures as people read them: '0.21s wall, 0.20s CPU, peak 52.1 MB (+50.0 MB)'."""
    if wall is None:
        return "not measured"
    parts = [f"{format_seconds(wall)} wall"]
    if cpu is not None:
        parts.append(f"{format_seconds(cpu)} CPU")
    if peak is not None:
        parts.append(f"peak {_megabytes(peak)}" + (f" (+{_megabytes(growth)})" if growth else ""))
    return ", ".join(parts) + (f" on {worker}" if worker else "")


def format_seconds(value: float) -> str:
    """A measured time: 0.49ms, 212ms, 3.14s, 2m05s."""
    if value < 0.01:
        return f"{value * 1000:.2f}ms"
    if value < 1:
        return f"{value * 1000:.0f}ms"
    return f"{value:.2f}s" if value < 60 else format_duration(value)


def _megabytes(value: int) -> str:
    return f"{value / 1e6:.1f} MB"


# -- reading the history ----------------------------------------------------------------


@dataclass(frozen=True)
class HistoryEntry:
    """A finished job as `batchq history` shows it. Times are the database server's (UTC);
    ``started_at`` is when its last try was claimed, ``finished_at`` when its end was recorded
    (with `run --batch`, when the batch's successes were). The figures are its last try's
    (``Usage``), None where unknown."""

    id: int
    queue: str
    task: str
    outcome: str  # succeeded | failed | cancelled (a job that keeps its result, cancelled)
    attempts: int
    worker: str | None
    enqueued_at: datetime | str | None
    started_at: datetime | str | None
    finished_at: datetime | str | None
    wall_seconds: float | None
    cpu_seconds: float | None
    memory_peak_bytes: int | None
    memory_growth_bytes: int | None
    payload: Any  # a JSON payload decoded; a pickled one is not unpickled here (None)
    serializer: str
    result: Any = None  # the task's return value, decoded from its stored JSON
    result_note: str | None = None
    error: str | None = None  # failed: its last error

    @classmethod
    def from_row(cls, row: Row) -> HistoryEntry:
        serializer = stored_text(row["serializer"])
        return cls(
            id=int(row["id"]),
            queue=stored_text(row["queue"]),
            task=stored_text(row["task"]),
            outcome=stored_text(row["outcome"]),
            attempts=stored_count(row["attempts"]),
            worker=None if row["worker"] is None else stored_text(row["worker"]),
            enqueued_at=stored_time(row["enqueued_at"]),
            started_at=stored_time(row["started_at"]),
            finished_at=stored_time(row["finished_at"]),
            wall_seconds=stored_seconds(row["wall_seconds"]),
            cpu_seconds=stored_seconds(row["cpu_seconds"]),
            memory_peak_bytes=_bytes(row["memory_peak_bytes"]),
            memory_growth_bytes=_bytes(row["memory_growth_bytes"]),
            payload=_json(row["payload"]) if serializer == "json" else None,
            serializer=serializer,
            result=_json(row["result"]),
            result_note=None if row["result_note"] is None else stored_text(row["result_note"]),
            error=None if row["error"] is None else stored_text(row["error"]),
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _bytes(value: Any) -> int | None:
    return None if value is None else stored_count(value)


def _json(value: Any) -> Any:
    """Stored JSON decoded; what does not decode (a row written by hand) as its text."""
    if value is None:
        return None
    text = stored_text(value)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def read_history(backend: Backend, filters: dict[str, Any]) -> list[HistoryEntry]:
    """The job store's history, with checked filters (Queue.history checks them)."""
    return [HistoryEntry.from_row(row) for row in backend.stores.jobs.history(**filters)]


def prune(
    backend: Backend,
    limits: Sequence[tuple[str | None, float]],
    batch: int = PRUNE_BATCH,
    spare: bool = False,
) -> int:
    """Delete the history records older than each (queue, seconds) of ``limits`` (queue None:
    every queue's); returns how many. ``spare`` (a queue's keep_for): not the records whose own
    keep_result has not run out (batchq.jobs.results).

    In statements of ``batch`` records (1,000), each its own transaction in autocommit: a
    statement deletes in a few milliseconds, so it never holds many row locks or a long
    transaction (MySQL's undo log and binlog stay small, PostgreSQL's vacuum is never held
    back, SQLite's single write lock is free between statements), and workers writing history
    at the same time wait at most one batch. A prune that is stopped leaves every batch it
    committed done; the next run goes on from there.
    """
    total = 0
    store = backend.stores.jobs
    for queue, older_than in limits:
        while True:
            deleted = store.prune_history(queue, older_than, batch, spare)
            total += deleted
            if deleted < batch:
                break
    return total
