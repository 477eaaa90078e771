"""The dashboard's pages and actions: a Flask app over one Queue.

Pages only read (plain SELECTs in autocommit, as `batchq stats`, `explain` and `metrics` do).
Actions are POSTs that the Guard lets through only with a signed-in session and its CSRF token,
then redirect back (the page reloads with a note). Jinja escapes every value it writes, and the
Content-Security-Policy runs no script but the page's own (a nonce per response).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from flask import Flask, Response, abort, g, redirect, render_template, request
from werkzeug.exceptions import HTTPException

from ..config import check_queue_name, format_duration, format_time
from ..errors import BackendError, BackendUnavailable, ConfigError
from ..job import JOB_ID_RANGE
from ..locks import list_locks
from ..metrics import read_queues, render
from ..queue import Queue
from ..registry import list_workers, request_stop
from ..sweeps import failure_groups, gc_error
from . import reads
from .security import SESSION_COOKIE, Guard

DEFAULT_REFRESH_SECONDS = 5.0
# What `batchq metrics` prints: the Prometheus text format every Prometheus version scrapes.
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def create_app(queue: Queue, guard: Guard, refresh: float = DEFAULT_REFRESH_SECONDS) -> Flask:
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024  # forms carry a few short fields
    backend = queue.backend
    _add_filters(app)

    @app.before_request
    def _session() -> None:
        g.nonce = secrets.token_urlsafe(16)
        g.session = guard.session_nonce(request.cookies.get(SESSION_COOKIE))

    @app.context_processor
    def _common() -> dict[str, Any]:
        return {
            "mode": guard.mode,
            "signed_in": g.session is not None,
            "csrf": guard.csrf_token(g.session) if g.session else "",
            "nonce": g.nonce,
            "refresh": refresh,
            "database": str(backend.url),
            "note": _signed_note(guard),
        }

    @app.after_request
    def _headers(response: Response) -> Response:
        nonce = getattr(g, "nonce", "")
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response

    @app.errorhandler(ConfigError)
    def _bad_input(exc: ConfigError) -> tuple[str, int]:
        return render_template("error.html", title="Bad request", message=str(exc)), 400

    @app.errorhandler(HTTPException)
    def _refused(exc: HTTPException) -> tuple[str, int]:
        return render_template("error.html", title=exc.name, message=exc.description), exc.code or 500

    @app.errorhandler(BackendUnavailable)
    def _database_down(exc: BackendUnavailable) -> tuple[str, int]:
        return render_template("error.html", title="Database unreachable", message=str(exc)), 503

    # -- pages ------------------------------------------------------------------------

    @app.get("/")
    def queues() -> str:
        return render_template(
            "queues.html", title="Queues", queues=read_queues(backend), partitions=queue.partitions()
        )

    @app.get("/jobs")
    def jobs() -> str:
        name = request.args.get("queue", "")  # as stored: rows written by hand may hold any name
        if not name:
            raise ConfigError("which queue? add ?queue=NAME")
        state = request.args.get("state") or None
        task = request.args.get("task") or None
        after = reads.Cursor.from_params(request.args)
        try:
            page = reads.job_page(backend, name, state=state, task=task, after=after)
        except BackendUnavailable:
            raise
        except BackendError as exc:
            if after is None:
                raise
            raise ConfigError(f"bad page link ({exc}): start again from the first page") from None
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

    @app.get("/jobs/<int:job_id>")
    def job(job_id: int) -> tuple[str, int]:
        if not JOB_ID_RANGE[0] <= job_id <= JOB_ID_RANGE[1]:
            abort(404)
        explanation = queue.explain(job_id)
        payload = reads.payload_view(backend, job_id) if explanation.exists else None
        status = 200 if explanation.exists else 404
        return render_template("job.html", title=f"Job {job_id}", job=explanation, payload=payload), status

    @app.get("/failures")
    def failures() -> str:
        return render_template("failures.html", title="Failure groups", groups=failure_groups(queue))

    @app.get("/workers")
    def workers() -> str:
        registered = list_workers(backend)
        return render_template(
            "workers.html", title="Workers", registered=registered, workers=reads.workers(backend)
        )

    @app.get("/schedules")
    def schedules() -> str:
        return render_template("schedules.html", title="Schedules", schedules=queue.schedules.list())

    @app.get("/locks")
    def locks() -> str:
        held = list_locks(queue.database, include_free=True)
        return render_template("locks.html", title="Locks", locks=held)

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(render(backend), content_type=METRICS_CONTENT_TYPE)

    # -- signing in -------------------------------------------------------------------

    @app.get("/login")
    def login_form() -> str:
        return render_template("login.html", title="Sign in", failed=False)

    @app.post("/login")
    def login() -> Any:
        _same_origin()
        if not guard.mode.actions:
            abort(403, guard.mode.why_read_only)
        if not guard.token_matches(request.form.get("token", "")):
            return render_template("login.html", title="Sign in", failed=True), 403
        response = redirect(_back("/"), 303)
        response.set_cookie(SESSION_COOKIE, guard.new_session(), httponly=True, samesite="Strict", path="/")
        return response

    @app.post("/logout")
    def logout() -> Any:
        _check_action()
        response = redirect("/", 303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="Strict")
        return response

    # -- actions ------------------------------------------------------------------------

    def action(path: str) -> Callable[[Callable[[], str]], Callable[[], Any]]:
        """A POST that acts once the Guard lets it, then goes back with its note."""

        def register(act: Callable[[], str]) -> Callable[[], Any]:
            def handler() -> Any:
                _check_action()
                note = act()
                return redirect(_back("/", note=note, sig=guard.note_signature(note)), 303)

            app.add_url_rule(path, act.__name__, handler, methods=["POST"])
            return handler

        return register

    @action("/actions/pause")
    def pause() -> str:
        name = check_queue_name(request.form.get("queue", ""))
        queue.pause(name)
        return f"paused queue {name}"

    @action("/actions/resume")
    def resume() -> str:
        name = check_queue_name(request.form.get("queue", ""))
        queue.resume(name)
        return f"resumed queue {name}"

    @action("/actions/requeue-group")
    def requeue_group() -> str:
        group = request.form.get("fingerprint", "")
        done = gc_error(queue, "requeue", groups=[group])
        held = [job for job in done if job.key_held_by is not None]
        note = f"requeued {len(done) - len(held)} jobs of failure group {group}"
        return note + (f"; {len(held)} left failed: their unique key is held" if held else "")

    @action("/actions/delete-group")
    def delete_group() -> str:
        group = request.form.get("fingerprint", "")
        return f"deleted {len(gc_error(queue, 'delete', groups=[group]))} failed jobs of group {group}"

    @action("/actions/stop-worker")
    def stop_worker() -> str:
        name = request.form.get("name", "")
        if request_stop(backend, name=name):
            return f"asked worker {name} to finish its job and exit"
        return f"worker {name} is not registered: it has exited"

    @action("/actions/cancel")
    def cancel() -> str:
        job_id = _job_id(request.form.get("id", ""))
        if queue.cancel(job_id):
            return f"cancelled job {job_id}"
        return f"job {job_id} was not cancelled: it is running, or gone"

    def _check_action() -> None:
        _same_origin()
        if not guard.mode.actions:
            abort(403, guard.mode.why_read_only)
        if g.session is None:
            abort(403, "sign in with the dashboard token first")
        if not guard.csrf_matches(g.session, request.form.get("csrf", "")):
            abort(403, "the form's CSRF token is missing or wrong: reload the page and try again")

    return app


def _same_origin() -> None:
    """A browser names the page a POST came from; refuse one from another site."""
    origin = request.headers.get("Origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.host:
        abort(403, f"a POST from another site ({origin}) is refused")


_LOCAL_PATH = re.compile(r"/(?!/)[!-\[\]-~]*")  # printable ASCII but "\\", not starting "//"


def _back(default: str, **params: str) -> str:
    """Where an action returns: the page it was sent from (a path on this site), with a note in
    place of the last one."""
    target = request.form.get("back", "")
    parts = urlsplit(target)
    # A path on this site only: browsers read "//host" and "/\\host" as another site.
    if not _LOCAL_PATH.fullmatch(target) or parts.scheme or parts.netloc:
        parts = urlsplit(default)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("note", "sig")] + list(params.items())
    return parts.path + (f"?{urlencode(query)}" if query else "")


def _signed_note(guard: Guard) -> str:
    """The note an action left in the URL, if this process signed it; else nothing."""
    note = request.args.get("note", "")
    return note[:300] if note and guard.note_matches(note, request.args.get("sig", "")) else ""


def _job_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"bad job id {text!r}: use a whole number") from None


def _add_filters(app: Flask) -> None:
    app.jinja_env.filters["age"] = lambda seconds: "-" if seconds is None else format_duration(float(seconds))
    app.jinja_env.filters["when"] = _when
    app.jinja_env.filters["due"] = _due
    app.jinja_env.filters["size"] = _size


def _when(value: datetime | str | None) -> str:
    return "-" if value is None else format_time(value)


def _due(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds <= 0:
        return f"due {format_duration(-seconds)} ago"
    return f"in {format_duration(seconds)}"


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"
