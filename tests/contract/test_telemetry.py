"""Hooks around enqueue and around each job (batchq.jobs.hooks), and OpenTelemetry's spans through them
(batchq.contrib.otel), on every backend: the trace context goes from the enqueue into the row and
back out to the job's span (issue 28, part 5)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from batchq import ConfigError, PayloadError, Queue
from batchq.contrib.otel import EnqueueSpans, JobSpans, install
from batchq.jobs.calls import Call, CallOutcome
from batchq.jobs.hooks import (
    ENQUEUE_LAYERS,
    Enqueue,
    EnqueueNext,
    around_enqueue,
    around_job,
    remove_enqueue_middleware,
)
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import job_rows, sql

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def stored_context(queue: Queue, job_id: int) -> Any:
    [(value,)] = sql(queue, f"SELECT trace_context FROM batchq_job WHERE id = {int(job_id)}")
    return value


def set_context(enqueue: Enqueue, call_next: EnqueueNext) -> Any:
    enqueue.trace_context = TRACEPARENT
    return call_next(enqueue)


def by_name(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


# -- enqueue hooks -------------------------------------------------------------------


def test_enqueue_hooks_see_before_after_and_error(queue: Queue, db_url: str) -> None:
    seen: list[tuple[Any, ...]] = []
    hooks = around_enqueue(
        before=lambda e: seen.append(("before", e.task, e.queue, e.count)),
        after=lambda e, result: seen.append(("after", type(result).__name__)),
        error=lambda e, exc: seen.append(("error", type(exc).__name__)),
    )
    hooked = Queue(db_url, task_modules=["jobs"], enqueue_middleware=[hooks])
    job_id = hooked.enqueue("jobs:noop", {"n": 1}, queue="mail")
    assert hooked.enqueue_many("jobs:noop", [1, 2, 3]) == 3
    with pytest.raises(PayloadError):
        hooked.enqueue("jobs:noop", "x" * (queue.backend.payload_limit() + 10))
    assert seen == [
        ("before", "jobs:noop", "mail", 1),
        ("after", "Enqueued"),
        ("before", "jobs:noop", "default", 3),
        ("after", "int"),
        ("before", "jobs:noop", "default", 1),
        ("error", "PayloadError"),
    ]
    assert [row["id"] for row in job_rows(queue)][0] == job_id
    hooked.close()


def test_without_hooks_the_trace_context_is_null(queue: Queue) -> None:
    job_id = queue.enqueue("jobs:noop")
    queue.enqueue_many("jobs:noop", [1, 2])
    assert [row[0] for row in sql(queue, "SELECT trace_context FROM batchq_job")] == [None] * 3
    assert stored_context(queue, job_id) is None


def test_a_layer_sets_the_trace_context_stored_on_every_row(queue: Queue, db_url: str) -> None:
    hooked = Queue(db_url, task_modules=["jobs"], enqueue_middleware=[set_context])
    hooked.enqueue("jobs:noop")
    hooked.enqueue("jobs:noop", unique_key="one")
    hooked.enqueue_many("jobs:noop", [1, 2])
    hooked.enqueue_many("jobs:noop", [3, 4], unique_keys=["a", "b"])
    assert [row[0] for row in sql(queue, "SELECT trace_context FROM batchq_job")] == [TRACEPARENT] * 6
    hooked.close()


@pytest.mark.parametrize("bad", ["x" * 513, "00-ü-trace", "line\nbreak", "", 42])
def test_a_bad_trace_context_is_refused_before_anything_is_written(
    queue: Queue, db_url: str, bad: Any
) -> None:
    def set_bad(enqueue: Enqueue, call_next: EnqueueNext) -> Any:
        enqueue.trace_context = bad
        return call_next(enqueue)

    hooked = Queue(db_url, task_modules=["jobs"], enqueue_middleware=[set_bad])
    with pytest.raises(ConfigError, match="bad trace_context"):
        hooked.enqueue("jobs:noop")
    with pytest.raises(ConfigError, match="bad trace_context"):
        hooked.enqueue_many("jobs:noop", [1])
    assert job_rows(queue) == []
    hooked.close()


def test_process_wide_enqueue_middleware_runs_for_every_queue_until_removed(queue: Queue) -> None:
    calls: list[str] = []
    layer = around_enqueue(before=lambda e: calls.append(e.task))
    from batchq.jobs.hooks import add_enqueue_middleware

    add_enqueue_middleware(layer)
    try:
        queue.enqueue("jobs:noop")
        assert [layer] == ENQUEUE_LAYERS
    finally:
        remove_enqueue_middleware(layer)
    queue.enqueue("jobs:noop")
    assert calls == ["jobs:noop"] and ENQUEUE_LAYERS == []


def test_an_enqueue_middleware_of_the_wrong_shape_is_refused_at_once(db_url: str) -> None:
    def wrong(enqueue: Enqueue) -> Any:
        return None

    with pytest.raises(ConfigError, match=r"must take \(enqueue, call_next\)"):
        Queue(db_url, enqueue_middleware=[wrong])  # type: ignore[list-item]


def test_a_failing_hook_is_logged_and_the_enqueue_goes_on(queue: Queue, db_url: str, caplog: Any) -> None:
    def broken(enqueue: Enqueue) -> None:
        raise RuntimeError("hook bug")

    hooked = Queue(db_url, task_modules=["jobs"], enqueue_middleware=[around_enqueue(before=broken)])
    hooked.enqueue("jobs:noop")
    assert len(job_rows(queue)) == 1
    assert "the before hook" in caplog.text and "hook bug" in caplog.text
    hooked.close()


# -- job hooks -----------------------------------------------------------------------


def test_job_hooks_see_before_after_and_error(queue: Queue) -> None:
    queue.enqueue("jobs:noop")
    queue.enqueue("jobs:fail")
    seen: list[tuple[str, str]] = []

    def broken_after(call: Call, outcome: CallOutcome) -> None:
        seen.append(("after", call.job.task))
        raise RuntimeError("hook bug")  # logged: the job still succeeds

    hooks = around_job(
        before=lambda call: seen.append(("before", call.job.task)),
        after=broken_after,
        error=lambda call, outcome: seen.append(("error", type(outcome.exception).__name__)),
    )
    summary = Worker(queue, RunOptions(), middleware=[hooks]).run()
    assert seen == [
        ("before", "jobs:noop"),
        ("after", "jobs:noop"),
        ("before", "jobs:fail"),
        ("error", "ValueError"),
    ]
    assert (summary.succeeded, summary.errors) == (1, 1)


# -- OpenTelemetry -----------------------------------------------------------------


def test_the_job_span_is_a_child_of_the_enqueue_span_in_the_request_trace(
    queue: Queue, db_url: str, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    traced = Queue(db_url, task_modules=["jobs"], enqueue_middleware=[EnqueueSpans(provider)])
    with provider.get_tracer("test").start_as_current_span("GET /orders") as request:
        job_id = traced.enqueue("jobs:noop", queue="mail")
        failing_id = traced.enqueue("jobs:fail", queue="mail", max_errors=1)
    stored = stored_context(queue, job_id)
    assert stored.startswith(f"00-{request.get_span_context().trace_id:032x}-")
    Worker(queue, RunOptions(queues=("mail",)), middleware=[JobSpans(provider)]).run()

    [send, send_failing] = by_name(exporter, "send mail")
    [good, bad] = by_name(exporter, "process mail")
    trace_id = request.get_span_context().trace_id
    assert send.kind == SpanKind.PRODUCER and send.parent is not None
    assert send.parent.span_id == request.get_span_context().span_id
    assert send.attributes is not None and send.attributes["messaging.message.id"] == str(job_id)
    assert good.kind == SpanKind.CONSUMER
    assert good.context is not None and good.context.trace_id == trace_id
    assert good.parent is not None and good.parent.span_id == send.context.span_id  # type: ignore[union-attr]
    assert dict(good.attributes or {}) == {
        "messaging.system": "batchq",
        "messaging.destination.name": "mail",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.message.id": str(job_id),
        "batchq.task": "jobs:noop",
        "batchq.job.try": 1,
    }
    assert good.status.status_code == StatusCode.UNSET
    assert bad.parent is not None and bad.parent.span_id == send_failing.context.span_id  # type: ignore[union-attr]
    assert bad.attributes is not None and bad.attributes["messaging.message.id"] == str(failing_id)
    assert bad.status.status_code == StatusCode.ERROR and "ValueError" in (bad.status.description or "")
    assert bad.attributes["error.type"] == "builtins.ValueError"
    assert [event.name for event in bad.events] == ["exception"]
    traced.close()


def test_install_traces_every_queue_of_the_process(
    queue: Queue, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    layer = install(provider)
    try:
        queue.enqueue_many("jobs:noop", [1, 2])
    finally:
        remove_enqueue_middleware(layer)
    [send] = by_name(exporter, "send default")
    assert send.attributes is not None and send.attributes["messaging.batch.message_count"] == 2
    assert [row[0] for row in sql(queue, "SELECT trace_context FROM batchq_job")][0].startswith("00-")


def test_outside_a_span_nothing_is_stored_and_the_job_span_is_a_root(
    queue: Queue, db_url: str, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    traced = Queue(db_url, task_modules=["jobs"], enqueue_middleware=[EnqueueSpans(provider)])
    job_id = traced.enqueue("jobs:noop")  # no current span: a trace of the enqueue's own
    untraced_id = queue.enqueue("jobs:noop")  # no enqueue middleware: nothing stored
    assert stored_context(queue, untraced_id) is None
    Worker(queue, RunOptions(), middleware=[JobSpans(provider)]).run()
    [send] = by_name(exporter, "send default")
    [traced_span, untraced_span] = by_name(exporter, "process default")
    assert send.parent is None and traced_span.parent is not None
    assert traced_span.parent.span_id == send.context.span_id  # type: ignore[union-attr]
    assert traced_span.attributes is not None and traced_span.attributes["messaging.message.id"] == str(
        job_id
    )
    assert untraced_span.parent is None
    traced.close()


@pytest.mark.parametrize(
    "garbage",
    [
        "not a traceparent at all",
        "00-00000000000000000000000000000000-0000000000000000-01",  # all-zero ids: invalid
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  # version ff is forbidden
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333ü-01",  # not ASCII
    ],
)
def test_a_garbage_trace_context_written_by_sql_starts_a_new_trace(
    queue: Queue, spans: tuple[TracerProvider, InMemorySpanExporter], garbage: str
) -> None:
    provider, exporter = spans
    job_id = queue.enqueue("jobs:noop")
    placeholder = "?" if queue.backend.dialect == "sqlite" else "%s"
    sql(queue, f"UPDATE batchq_job SET trace_context = {placeholder} WHERE id = {job_id}", (garbage,))
    summary = Worker(queue, RunOptions(), middleware=[JobSpans(provider)]).run()
    assert summary.succeeded == 1
    [span] = by_name(exporter, "process default")
    assert span.parent is None


@pytest.mark.backends("sqlite", "postgresql")
def test_an_oversize_trace_context_written_by_sql_is_ignored(
    queue: Queue, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    job_id = queue.enqueue("jobs:noop")
    placeholder = "?" if queue.backend.dialect == "sqlite" else "%s"
    sql(
        queue,
        f"UPDATE batchq_job SET trace_context = {placeholder} WHERE id = {job_id}",
        (TRACEPARENT + " " + "k=v" * 10_000,),
    )
    assert Worker(queue, RunOptions(), middleware=[JobSpans(provider)]).run().succeeded == 1
    [span] = by_name(exporter, "process default")
    assert span.parent is None


@pytest.mark.backends("sqlite")
def test_a_blob_trace_context_written_by_sql_is_ignored(
    queue: Queue, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    job_id = queue.enqueue("jobs:noop")
    sql(queue, f"UPDATE batchq_job SET trace_context = ? WHERE id = {job_id}", (TRACEPARENT.encode(),))
    assert Worker(queue, RunOptions(), middleware=[JobSpans(provider)]).run().succeeded == 1
    [span] = by_name(exporter, "process default")
    assert span.parent is None


def test_a_bad_tracestate_written_by_sql_is_dropped_and_the_traceparent_kept(
    queue: Queue, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    job_id = queue.enqueue("jobs:noop")
    placeholder = "?" if queue.backend.dialect == "sqlite" else "%s"
    bad_state = TRACEPARENT + " " + "=,;!" * 100  # 456 characters: fits, but is no tracestate
    sql(queue, f"UPDATE batchq_job SET trace_context = {placeholder} WHERE id = {job_id}", (bad_state,))
    assert Worker(queue, RunOptions(), middleware=[JobSpans(provider)]).run().succeeded == 1
    [span] = by_name(exporter, "process default")
    assert span.parent is not None and f"{span.parent.span_id:016x}" == TRACEPARENT.split("-")[2]
    assert span.context is not None and not span.context.trace_state


# -- the other enqueue paths --------------------------------------------------------


def test_enqueue_on_commit_is_traced_when_built_and_written_with_the_trace_when_the_app_commits(
    queue: Queue, db_url: str, tmp_path: Any, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    import sqlalchemy as sa
    from sqlalchemy.orm import Session

    provider, exporter = spans
    traced = Queue(db_url, task_modules=["jobs"], enqueue_middleware=[EnqueueSpans(provider)])
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'app.db'}")
    with (
        provider.get_tracer("test").start_as_current_span("POST /notes") as request,
        Session(engine) as session,
    ):
        session.execute(sa.text("SELECT 1"))
        traced.enqueue_on_commit(session, "jobs:noop", {"n": 1})
        assert job_rows(queue) == []
        session.commit()
    engine.dispose()
    [send] = by_name(exporter, "send default")
    [(stored,)] = sql(queue, "SELECT trace_context FROM batchq_job")
    trace_id = request.get_span_context().trace_id
    assert stored.startswith(f"00-{trace_id:032x}-{send.context.span_id:016x}-")  # type: ignore[union-attr]
    assert send.attributes is not None and "messaging.message.id" not in send.attributes  # not yet written
    traced.close()


def test_async_enqueues_carry_the_callers_trace(
    db_url: str, queue: Queue, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    import asyncio

    from batchq.aio import AsyncQueue

    provider, exporter = spans

    async def request() -> tuple[int, int]:
        aq = AsyncQueue(db_url, task_modules=["jobs"], enqueue_middleware=[EnqueueSpans(provider)])
        try:
            with provider.get_tracer("test").start_as_current_span("GET /async") as span:
                job_id = await aq.enqueue("jobs:noop")
            return span.get_span_context().trace_id, job_id
        finally:
            await aq.close()

    trace_id, job_id = asyncio.run(request())
    [send] = by_name(exporter, "send default")
    assert send.context is not None and send.context.trace_id == trace_id  # the greenlet kept the context
    assert stored_context(queue, job_id).startswith(f"00-{trace_id:032x}-{send.context.span_id:016x}-")


def test_a_chain_and_a_group_are_one_enqueue_whose_trace_every_job_carries(
    queue: Queue, db_url: str, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    seen: list[tuple[str, int | None]] = []
    noted = around_enqueue(before=lambda e: seen.append((e.task, e.count)))
    traced = Queue(db_url, task_modules=["jobs"], enqueue_middleware=[noted, EnqueueSpans(provider)])
    with provider.get_tracer("test").start_as_current_span("POST /batch"):
        chain = traced.chain([("jobs:noop", {"n": 1}), ("jobs:echo", {"n": 2})])
        group = traced.group([("jobs:noop", {"n": 3}), ("jobs:noop", {"n": 4})], then=("jobs:echo", None))
    assert group.callback is not None
    assert seen == [("jobs:noop", 2), ("jobs:noop", 3)]
    chain_send, group_send = by_name(exporter, "send default")
    assert chain_send.attributes is not None and chain_send.attributes["messaging.batch.message_count"] == 2
    for send, ids in ((chain_send, chain), (group_send, [*group.members, group.callback])):
        for job_id in ids:
            assert stored_context(queue, job_id).split("-")[2] == f"{send.context.span_id:016x}"  # type: ignore[union-attr]
    Worker(queue, RunOptions(), middleware=[JobSpans(provider)]).run()
    parents = {span.attributes["messaging.message.id"]: span.parent.span_id  # type: ignore[index,union-attr]
               for span in by_name(exporter, "process default")}  # fmt: skip
    assert parents == {
        **{str(job_id): chain_send.context.span_id for job_id in chain},  # type: ignore[union-attr]
        **{str(job_id): group_send.context.span_id for job_id in [*group.members, group.callback]},  # type: ignore[union-attr]
    }
    traced.close()


def test_untraced_chains_and_groups_store_no_trace_context(queue: Queue) -> None:
    queue.chain([("jobs:noop", None), ("jobs:noop", None)])
    queue.group([("jobs:noop", None)], then=("jobs:noop", None))
    assert [row[0] for row in sql(queue, "SELECT trace_context FROM batchq_job")] == [None] * 4
