"""OpenTelemetry for batchq (the ``batchq[otel]`` extra): a span per enqueue and per job, in the
trace of the request that enqueued the job.

- ``EnqueueSpans``, an enqueue middleware (batchq.jobs.hooks): a PRODUCER span ``send <queue>`` around
  each enqueue, whose context (the W3C ``traceparent``, and ``tracestate`` when it fits) is
  stored on the job's row. ``install()`` adds it for every Queue of the process.
- ``JobSpans``, a job middleware: a CONSUMER span ``process <queue>`` around each job's call,
  child of the enqueue's span when the row carries one (else the root of a new trace), current
  while the task runs (its own spans nest under it). A failed try sets the span's status to
  ERROR and records the exception. For `batchq run`: ``--middleware batchq.contrib.otel:JobSpans``
  (the SDK set up by the app: ``BATCHQ_MIDDLEWARE=myapp.otel:job_spans``, docs/how-to/opentelemetry.md).

Attributes follow OpenTelemetry's messaging conventions: ``messaging.system`` = ``batchq``,
``messaging.destination.name`` (the queue), ``messaging.operation.type`` (``send``/``process``),
``messaging.message.id`` (the job id), plus ``batchq.task`` and ``batchq.job.try``. Only the
OpenTelemetry API is imported; the SDK (or any other implementation) is the app's choice.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ..backends import stored_count
from ..jobs.calls import HELD, NEWER_VERSION, Call, CallNext, CallOutcome
from ..jobs.hooks import Enqueue, EnqueueNext, add_enqueue_middleware
from ..jobs.jobspec import TRACE_CONTEXT_MAX_CHARS

SYSTEM = "batchq"
TRACER_NAME = "batchq.contrib.otel"
STATUS_MAX_CHARS = 200  # a failed span's status description: the first line of last_error
# W3C Trace Context only (not the global propagator: baggage would be written into every row).
_PROPAGATOR = TraceContextTextMapPropagator()


def current_trace_context() -> str | None:
    """The current span's context as a job row stores it: 'traceparent', or 'traceparent
    tracestate' when that fits the column (else tracestate is left out); None outside a span."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    parent = carrier.get("traceparent")
    if not parent:
        return None
    state = carrier.get("tracestate")
    if state:
        joined = f"{parent} {state}"
        if len(joined) <= TRACE_CONTEXT_MAX_CHARS and joined.isascii() and joined.isprintable():
            return joined
    return parent


def context_of(stored: str | None) -> Context | None:
    """The parent context a stored trace context names; None when there is none. A value that
    is no valid traceparent gives an empty context: the job's span starts a trace of its own."""
    if not stored:
        return None
    parent, _, state = stored.partition(" ")
    carrier = {"traceparent": parent}
    if state:
        carrier["tracestate"] = state
    return _PROPAGATOR.extract(carrier, context=Context())


class EnqueueSpans:
    """Enqueue middleware: a PRODUCER span per enqueue call, its context stored on the jobs."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer(TRACER_NAME, tracer_provider=tracer_provider)

    def __call__(self, enqueue: Enqueue, call_next: EnqueueNext) -> Any:
        attributes: dict[str, Any] = {
            "messaging.system": SYSTEM,
            "messaging.destination.name": enqueue.queue,
            "messaging.operation.type": "send",
            "messaging.operation.name": "enqueue",
            "batchq.task": enqueue.task,
        }
        if enqueue.count != 1 and enqueue.count is not None:
            attributes["messaging.batch.message_count"] = enqueue.count
        name = f"send {enqueue.queue}"
        with self._tracer.start_as_current_span(name, kind=SpanKind.PRODUCER, attributes=attributes) as span:
            enqueue.trace_context = current_trace_context()
            result = call_next(enqueue)
            if enqueue.count == 1 and isinstance(result, int) and not isinstance(result, bool):
                span.set_attribute("messaging.message.id", str(int(result)))
            return result


class JobSpans:
    """Job middleware: a CONSUMER span per job, child of its enqueue's span (Call.trace_context)."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer(TRACER_NAME, tracer_provider=tracer_provider)

    def __call__(self, call: Call, call_next: CallNext) -> CallOutcome:
        job = call.job
        attributes: dict[str, Any] = {
            "messaging.system": SYSTEM,
            "messaging.destination.name": str(job.queue),
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.message.id": str(job.id),
            "batchq.task": str(job.task),
            "batchq.job.try": stored_count(job.error_count) + 1,
        }
        with self._tracer.start_as_current_span(
            f"process {job.queue}",
            context=context_of(call.trace_context()),
            kind=SpanKind.CONSUMER,
            attributes=attributes,
        ) as span:
            outcome = call_next(call)
            _record_outcome(span, outcome)
        return outcome


def _record_outcome(span: Span, outcome: CallOutcome) -> None:
    """A failed try: status ERROR with the first line of its last_error, error.type, and the
    exception (what the task raised, or the failure as an exception event when nothing was)."""
    if outcome.kind in (NEWER_VERSION, HELD):  # put back, not run
        span.set_attribute("batchq.outcome", outcome.kind)
        return
    failure = outcome.failure
    if failure is None:
        return
    error_type = failure.error_class or "_OTHER"
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, failure.error.split("\n", 1)[0][:STATUS_MAX_CHARS]))
    if outcome.exception is not None:
        span.record_exception(outcome.exception)
    else:  # a timeout, a task that returned False, a payload that does not match its queue's type
        span.add_event("exception", {"exception.type": error_type, "exception.message": failure.error})


def install(tracer_provider: TracerProvider | None = None) -> EnqueueSpans:
    """Add EnqueueSpans for every Queue of this process (the Django backend's and AsyncQueue's
    too); returns it (batchq.jobs.hooks.remove_enqueue_middleware takes it off again)."""
    layer = EnqueueSpans(tracer_provider)
    add_enqueue_middleware(layer)
    return layer
