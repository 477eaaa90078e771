"""A request and its job in one trace, across processes (issue 28, part 5): the test enqueues
inside a span with batchq.contrib.otel's enqueue middleware (spans caught by the SDK's in-memory
exporter), a real `batchq run` with ``--middleware`` / BATCHQ_MIDDLEWARE (tests/apps/otel_app.py:
the SDK writing each span as a JSON line) runs the jobs, and the spans of both processes are
compared."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from batchq import Queue
from batchq.contrib.otel import EnqueueSpans
from tests.support.db import job_rows
from tests.support.processes import assert_one_line_error, run_batchq

pytestmark = pytest.mark.slow


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def worker_spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_the_job_span_of_a_worker_process_continues_the_request_trace(
    db_url: str, tmp_path: Path, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    queue = Queue(db_url, task_modules=["otel_jobs"], enqueue_middleware=[EnqueueSpans(provider)])
    with provider.get_tracer("test").start_as_current_span("POST /orders") as request:
        good = queue.enqueue("otel_jobs:ok", {"order": 1})
        bad = queue.enqueue("otel_jobs:boom", {"order": 2}, max_errors=1)
    queue.close()
    trace_id = f"{request.get_span_context().trace_id:032x}"
    sends = {
        span.attributes["messaging.message.id"]: span
        for span in exporter.get_finished_spans()
        if span.name == "send default" and span.attributes
    }
    file = tmp_path / "spans.jsonl"

    done = run_batchq(
        db_url, "run", "--middleware", "otel_app:job_spans",
        BATCHQ_TASK_MODULES="otel_jobs", OTEL_SPANS_FILE=str(file),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    found = {span["name"]: span for span in worker_spans(file) if span["name"] == "inside the task"}
    jobs = {span["attributes"]["messaging.message.id"]: span for span in worker_spans(file)
            if span["name"] == "process default"}  # fmt: skip
    assert set(jobs) == {str(good), str(bad)}
    for job_id, span in jobs.items():
        assert span["kind"] == "CONSUMER" and span["trace_id"] == trace_id
        assert span["parent_id"] == f"{sends[job_id].context.span_id:016x}"  # type: ignore[union-attr]
    assert jobs[str(good)]["status"] == "UNSET"
    assert jobs[str(bad)]["status"] == "ERROR" and jobs[str(bad)]["events"] == ["exception"]
    assert jobs[str(bad)]["attributes"]["error.type"] == "builtins.ValueError"
    inside = found["inside the task"]
    assert inside["trace_id"] == trace_id and inside["parent_id"] == jobs[str(good)]["span_id"]


def test_the_middleware_comes_from_the_environment_too(db_url: str, tmp_path: Path) -> None:
    queue = Queue(db_url, task_modules=["otel_jobs"])
    job_id = queue.enqueue("otel_jobs:ok")  # untraced: the job's span starts a trace
    queue.close()
    file = tmp_path / "spans.jsonl"
    done = run_batchq(
        db_url, "run", BATCHQ_TASK_MODULES="otel_jobs", OTEL_SPANS_FILE=str(file),
        BATCHQ_MIDDLEWARE="otel_app:job_spans",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [job] = [span for span in worker_spans(file) if span["name"] == "process default"]
    assert job["attributes"]["messaging.message.id"] == str(job_id) and job["parent_id"] is None


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("otel_app", "bad middleware 'otel_app': use 'package.module:name'"),
        ("no_such_module:layer", "cannot import module 'no_such_module'"),
        ("otel_app:nothing_here", "has no attribute 'nothing_here'"),
        ("otel_jobs:ok", "must take (call, call_next)"),
    ],
)
def test_a_middleware_that_cannot_be_used_stops_run_before_any_job(
    db_url: str, tmp_path: Path, path: str, says: str
) -> None:
    queue = Queue(db_url, task_modules=["otel_jobs"])
    queue.enqueue("otel_jobs:ok")
    done = run_batchq(
        db_url, "run", "--middleware", path, BATCHQ_TASK_MODULES="otel_jobs",
        OTEL_SPANS_FILE=str(tmp_path / "spans.jsonl"),
    )  # fmt: skip
    assert_one_line_error(done, says, status=2)  # a ConfigError: a usage error
    assert [row["status"] for row in job_rows(queue)] == ["ready"]
    queue.close()


def test_a_django_task_enqueued_in_a_request_span_runs_in_its_trace(db_url: str, tmp_path: Path) -> None:
    """The Django Tasks backend enqueues through Queue.enqueue: otel.install() traces it."""
    from tests.support.django_project import DjangoProject

    project = DjangoProject(db_url, tmp_path)
    out = project.shell(
        """
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from batchq.contrib import otel
from djproj_app import tasks

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
otel.install(provider)
with provider.get_tracer("django").start_as_current_span("POST /add"):
    result = tasks.add.enqueue(2, 3)
[send] = [s for s in exporter.get_finished_spans() if s.name.startswith("send ")]
out = {"id": result.id, "trace": f"{send.context.trace_id:032x}", "span": f"{send.context.span_id:016x}"}
"""
    )
    file = tmp_path / "spans.jsonl"
    done = project.batchq("run", "--middleware", "otel_app:job_spans", OTEL_SPANS_FILE=str(file))
    assert done.returncode == 0, done.stderr
    [job] = [span for span in worker_spans(file) if span["name"].startswith("process ")]
    assert job["attributes"]["messaging.message.id"] == out["id"]
    assert (job["trace_id"], job["parent_id"], job["status"]) == (out["trace"], out["span"], "UNSET")
