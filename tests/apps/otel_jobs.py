"""The jobs of tests/acceptance/test_telemetry.py, run by a `batchq run` with OpenTelemetry."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace


def ok(payload: Any = None) -> None:
    """A job whose task makes a span of its own: it nests under the job's span."""
    with trace.get_tracer("otel_jobs").start_as_current_span("inside the task"):
        pass


def boom(payload: Any = None) -> None:
    raise ValueError("boom in a traced job")
