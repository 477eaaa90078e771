"""A `batchq run` with OpenTelemetry (tests/acceptance/test_telemetry.py): the SDK set up at
import, as an app's own middleware module would, with an exporter that writes each finished span
as one JSON line to $OTEL_SPANS_FILE; ``job_spans`` for --middleware (the jobs: otel_jobs)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from batchq.contrib.otel import JobSpans


class LinesExporter(SpanExporter):
    """Each span as a JSON line: its ids as hex, kind, status, attributes and event names."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock, open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                out.write(json.dumps(describe(span)) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def describe(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    assert context is not None
    return {
        "name": span.name,
        "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "parent_id": None if span.parent is None else f"{span.parent.span_id:016x}",
        "kind": span.kind.name,
        "status": span.status.status_code.name,
        "attributes": dict(span.attributes or {}),
        "events": [event.name for event in span.events],
    }


_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(LinesExporter(os.environ["OTEL_SPANS_FILE"])))
trace.set_tracer_provider(_provider)

job_spans = JobSpans()  # the global provider, set just above
