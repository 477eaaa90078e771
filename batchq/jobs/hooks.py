"""Hooks an app registers around enqueue and around each job: telemetry, logs, metrics.

Both kinds are middleware, ``(what, call_next) -> result`` (call_next passed by name), as the
worker's chain already is (batchq.jobs.calls):

- Job middleware (``batchq.jobs.calls.Middleware``) wraps each job's call, outermost: in Python
  ``Worker(middleware=[...])``; under cron's `batchq run`, ``--middleware PATH`` or
  ``BATCHQ_MIDDLEWARE=PATH[,PATH...]`` (``pkg.mod:name``; a class is created with no arguments).
  Those paths come from the operator, as ``--hook`` does, not from job rows: they are imported
  as given, without BATCHQ_TASK_MODULES' allow-list (which stops a row naming os:system).
- Enqueue middleware (``EnqueueMiddleware``) wraps ``Queue.enqueue``, ``enqueue_many``,
  ``enqueue_on_commit``, ``chain`` and ``group`` (one call each, seen as its first step; so
  batchq.aio's and the Django backend's enqueues too; not schedules' jobs): for one queue
  ``Queue(enqueue_middleware=[...])``, for every queue of the process ``add_enqueue_middleware``.
  A layer may set ``enqueue.trace_context`` before calling on: it is stored on each job's row
  (checked: printable ASCII, at most 512 characters) and a worker's middleware reads it back with
  ``Call.trace_context()``. batchq.contrib.otel is such a pair of layers.

``around_job`` and ``around_enqueue`` make a layer of plain ``before``/``after``/``error``
callables; an exception of one of those is logged (logger ``batchq.jobs.hooks``), never the job's or
the enqueue's. Without any layer an enqueue costs two truthiness checks more than before.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from ..errors import ConfigError
from .calls import Call, CallNext, CallOutcome, Middleware, check_signature
from .jobspec import JobSpec, check_trace_context

MIDDLEWARE_ENV = "BATCHQ_MIDDLEWARE"
_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
log = logging.getLogger("batchq.jobs.hooks")


@dataclass(slots=True)
class Enqueue:
    """One enqueue call on its way to the database, as enqueue middleware sees it."""

    spec: JobSpec  # the jobs' options, checked: spec.task and spec.queue as rows name them
    count: int | None  # how many jobs the call writes (None: enqueue_many given an iterator)
    conn: Any = None  # the app's connection the jobs join (enqueue(conn=...)), else None
    trace_context: str | None = None  # set before call_next: stored on each job's row
    on_commit: bool = False  # enqueue_on_commit: the rows are written when the app commits

    @property
    def task(self) -> str:
        return self.spec.task

    @property
    def queue(self) -> str:
        return self.spec.queue


EnqueueNext = Callable[[Enqueue], Any]


class EnqueueMiddleware(Protocol):
    """A layer around an enqueue: returns what call_next returns (the enqueue's own result:
    an Enqueued id, enqueue_many's count, None for enqueue_on_commit)."""

    def __call__(self, enqueue: Enqueue, call_next: EnqueueNext) -> Any: ...


# Every Queue's enqueue middleware in this process, outermost first (before a Queue's own): a
# list changed in place, so that Queue.enqueue tests it without a lookup through this module.
ENQUEUE_LAYERS: list[EnqueueMiddleware] = []


def add_enqueue_middleware(layer: EnqueueMiddleware) -> None:
    """Run ``layer`` around every enqueue of every Queue in this process (from now on)."""
    check_signature(layer, "enqueue middleware", "(enqueue, call_next)")
    if layer not in ENQUEUE_LAYERS:
        ENQUEUE_LAYERS.append(layer)


def remove_enqueue_middleware(layer: EnqueueMiddleware) -> None:
    """Undo add_enqueue_middleware (nothing if it is not there)."""
    if layer in ENQUEUE_LAYERS:
        ENQUEUE_LAYERS.remove(layer)


def checked_enqueue_middleware(layers: Iterable[EnqueueMiddleware]) -> tuple[EnqueueMiddleware, ...]:
    """Queue(enqueue_middleware=...): each layer's signature checked now, not at the first enqueue."""
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Iterable):
        raise ConfigError(f"bad enqueue_middleware {layers!r}: give a list of callables")
    found = tuple(layers)
    for layer in found:
        check_signature(layer, "enqueue middleware", "(enqueue, call_next)")
    return found


def run_enqueue(
    layers: Sequence[EnqueueMiddleware], enqueue: Enqueue, write: Callable[[JobSpec], Any]
) -> Any:
    """The enqueue through ``layers``, outermost first; innermost, ``write`` gets the spec with
    the trace context the layers set (checked before anything is written)."""

    def innermost(done: Enqueue) -> Any:
        spec = done.spec
        if done.trace_context is not None:
            spec = spec._replace(trace_context=check_trace_context(done.trace_context))
        return write(spec)

    call_next: EnqueueNext = innermost
    for layer in reversed(layers):
        call_next = partial(layer, call_next=call_next)
    return call_next(enqueue)


# -- before, after, error ------------------------------------------------------------


def around_job(
    before: Callable[[Call], Any] | None = None,
    after: Callable[[Call, CallOutcome], Any] | None = None,
    error: Callable[[Call, CallOutcome], Any] | None = None,
) -> Middleware:
    """A job middleware of plain callables: ``before(call)``; then ``after(call, outcome)`` when
    the try succeeded (or was not a try: ``outcome.kind``), ``error(call, outcome)`` when it failed
    (``outcome.failure``: the row's last_error; ``outcome.exception``: what the task raised)."""

    def hooks(call: Call, call_next: CallNext) -> CallOutcome:
        if before is not None:
            _quietly(before, "before", call)
        outcome = call_next(call)
        hook = after if outcome.failure is None else error
        if hook is not None:
            _quietly(hook, "after" if hook is after else "error", call, outcome)
        return outcome

    return hooks


def around_enqueue(
    before: Callable[[Enqueue], Any] | None = None,
    after: Callable[[Enqueue, Any], Any] | None = None,
    error: Callable[[Enqueue, BaseException], Any] | None = None,
) -> EnqueueMiddleware:
    """An enqueue middleware of plain callables: ``before(enqueue)``; then ``after(enqueue,
    result)`` with what the enqueue returned, or ``error(enqueue, exc)`` before ``exc`` (bad
    payload, database error) reaches the caller."""

    def hooks(enqueue: Enqueue, call_next: EnqueueNext) -> Any:
        if before is not None:
            _quietly(before, "before", enqueue)
        try:
            result = call_next(enqueue)
        except BaseException as exc:
            if error is not None:
                _quietly(error, "error", enqueue, exc)
            raise
        if after is not None:
            _quietly(after, "after", enqueue, result)
        return result

    return hooks


def _quietly(hook: Callable[..., Any], which: str, *args: Any) -> None:
    """A hook's failure is logged, never the job's or the enqueue's (telemetry must not break them)."""
    try:
        hook(*args)
    except Exception:
        log.exception("the %s hook %r raised; going on", which, hook)


# -- `batchq run --middleware` --------------------------------------------------------


def middleware_paths(text: str | Iterable[str] | None) -> list[str]:
    """--middleware's values and BATCHQ_MIDDLEWARE: paths separated by commas or spaces."""
    if text is None:
        return []
    parts = [text] if isinstance(text, str) else list(text)
    return [path for part in parts for path in re.split(r"[,\s]+", part) if path]


def load_middleware(path: str) -> Middleware:
    """A job middleware named by the operator: ``pkg.mod:name`` (a class is created with no
    arguments), checked to take (call, call_next). ConfigError says what is wrong."""
    if not _PATH.fullmatch(path):
        raise ConfigError(f"bad middleware {path!r}: use 'package.module:name'")
    module_name, attr_path = path.split(":", 1)
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"middleware {path!r}: cannot import module {module_name!r}: {exc}") from None
    for part in attr_path.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ConfigError(
                f"middleware {path!r}: {module_name!r} has no attribute {attr_path!r}"
            ) from None
    if inspect.isclass(found):
        try:
            found = found()
        except TypeError as exc:
            raise ConfigError(f"middleware {path!r}: cannot be created with no arguments ({exc})") from None
    if not callable(found):
        raise ConfigError(f"middleware {path!r} is not callable")
    check_signature(found, f"middleware {path!r}", "(call, call_next)")
    return found  # type: ignore[no-any-return]
