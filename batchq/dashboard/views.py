"""The dashboard's pages: they only read (plain SELECTs in autocommit, as `batchq stats`,
`explain` and `metrics` do)."""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Blueprint, Response, abort, render_template, request

from ..backends import Backend
from ..coordination.locks import list_locks
from ..core.job import JOB_ID_RANGE
from ..errors import BackendError, BackendUnavailable, ConfigError
from ..ops import charts as rollup
from ..ops.metrics import read_queues, render
from ..ops.registry import list_workers
from ..runtime.sweeps import failure_groups
from . import drawing, reads, search
from .context import current

# What `batchq metrics` prints: the Prometheus text format every Prometheus version scrapes.
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

blueprint = Blueprint("views", __name__)


@blueprint.get("/")
def queues() -> str:
    board = current()
    return render_template(
        "queues.html",
        title="Queues",
        queues=read_queues(board.backend),
        settings=board.backend.stores.settings.job_queues(),
        partitions=board.queue.partitions(),
    )


@blueprint.get("/charts")
def charts() -> str:
    chosen = rollup.check_range(request.args.get("range"))
    read = rollup.read(current().backend, chosen)
    return render_template(
        "charts.html",
        title="Charts",
        charts=read,
        panels=drawing.panels(read),
        ranges=list(rollup.RANGES),
        colour=drawing.colour,
        size=(drawing.WIDTH, drawing.HEIGHT, drawing.LEFT, drawing.RIGHT, drawing.TOP, drawing.BOTTOM),
        age_label=drawing.age_label,
        count_label=drawing.count_label,
        top_queues=rollup.TOP_QUEUES,
    )


@blueprint.get("/jobs")
def jobs() -> str:
    name = request.args.get("queue", "")  # as stored: rows written by hand may hold any name
    if not name:
        raise ConfigError("which queue? add ?queue=NAME")
    state = request.args.get("state") or None
    task = request.args.get("task") or None
    after = reads.Cursor.from_params(request.args)
    page = _job_page(current().backend, name, state, task, after)
    filters = {"queue": name, "state": state or "", "task": task or ""}
    next_url = f"/jobs?{urlencode({**filters, **page.next.as_params()})}" if page.next else None
    return render_template(
        "jobs.html",
        title=f"Jobs of {name}",
        queue=name,
        state=state,
        task=task,
        states=reads.STATES,
        page=page,
        first_url=f"/jobs?{urlencode(filters)}" if after else None,
        next_url=next_url,
    )


def _job_page(
    backend: Backend, name: str, state: str | None, task: str | None, after: reads.Cursor | None
) -> reads.JobPage:
    """One page of the queue's jobs; a database error on a later page is the link's fault."""
    try:
        return reads.job_page(backend, name, state=state, task=task, after=after)
    except BackendUnavailable:
        raise
    except BackendError as exc:
        if after is None:
            raise
        raise ConfigError(f"bad page link ({exc}): start again from the first page") from None


@blueprint.get("/jobs/<int:job_id>")
def job(job_id: int) -> tuple[str, int]:
    if not JOB_ID_RANGE[0] <= job_id <= JOB_ID_RANGE[1]:
        abort(404)
    board = current()
    explanation = board.queue.explain(job_id)
    payload = reads.payload_view(board.backend, job_id) if explanation.exists else None
    status = 200 if explanation.exists else 404
    return render_template("job.html", title=f"Job {job_id}", job=explanation, payload=payload), status


@blueprint.get("/search")
def find() -> str:
    terms = search.SearchTerms.from_params(request.args)
    found = None if terms.empty else search.find(current().backend, terms)
    return render_template(
        "search.html",
        title="Search",
        terms=terms,
        found=found,
        states=search.SEARCH_STATES,
        window=search.SEARCH_WINDOW,
        payload_bytes=search.PAYLOAD_SEARCHED_BYTES,
    )


@blueprint.get("/failures")
def failures() -> str:
    # One row per cause and queue: its requeue and delete act on that row's jobs, never on the
    # cause's failed jobs in other queues.
    groups = failure_groups(current().queue, per_queue=True)
    return render_template("failures.html", title="Failure groups", groups=groups)


@blueprint.get("/workers")
def workers() -> str:
    backend = current().backend
    registered = list_workers(backend)
    return render_template(
        "workers.html", title="Workers", registered=registered, workers=reads.workers(backend)
    )


@blueprint.get("/schedules")
def schedules() -> str:
    return render_template("schedules.html", title="Schedules", schedules=current().queue.schedules.list())


@blueprint.get("/locks")
def locks() -> str:
    held = list_locks(current().queue.database, include_free=True)
    return render_template("locks.html", title="Locks", locks=held)


@blueprint.get("/metrics")
def metrics() -> Response:
    return Response(render(current().backend), content_type=METRICS_CONTENT_TYPE)
