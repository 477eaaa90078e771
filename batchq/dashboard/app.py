"""The dashboard: a Flask app over one Queue, made of three blueprints: views (pages that only
read), auth (signing in and out) and actions (POSTs the Guard lets through).

Jinja escapes every value it writes, and the Content-Security-Policy runs no script but the
page's own (a nonce per response).
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from flask import Flask, Response, g, make_response, render_template, request
from werkzeug.exceptions import HTTPException

from ..core.config import format_duration, format_time
from ..errors import BackendUnavailable, ConfigError
from ..ops.explain import percent
from ..queue import Queue
from . import actions, auth, messages, views
from .context import Dashboard, current, install
from .hosts import HostPolicy
from .params import check_query
from .posts import signed_note
from .security import SESSION_COOKIE, Guard

DEFAULT_REFRESH_SECONDS = 5.0
LOOPBACK_ONLY = HostPolicy.for_listener("127.0.0.1", ["127.0.0.1"])


def create_app(
    queue: Queue, guard: Guard, refresh: float = DEFAULT_REFRESH_SECONDS, hosts: HostPolicy = LOOPBACK_ONLY
) -> Flask:
    """The app; it answers only the Host headers ``hosts`` allows (batchq.dashboard.hosts)."""
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024  # forms carry a few short fields
    install(app, Dashboard(queue, guard, refresh, hosts))
    _add_filters(app)
    app.before_request(_host)
    app.before_request(_session)
    app.before_request(_input)
    app.context_processor(_common)
    app.after_request(_headers)
    app.register_error_handler(ConfigError, _bad_input)
    app.register_error_handler(HTTPException, _refused)
    app.register_error_handler(BackendUnavailable, _database_down)
    for blueprint in (views.blueprint, auth.blueprint, actions.blueprint, messages.blueprint):
        app.register_blueprint(blueprint)
    return app


def _host() -> Response | None:
    """Refuse a Host header this dashboard was not started for (DNS rebinding), in plain text:
    nothing the dashboard knows, not even its page layout, goes to a foreign host."""
    g.nonce = secrets.token_urlsafe(16)
    refused = current().hosts.refusal(request.environ.get("HTTP_HOST"))
    if refused is None:
        return None
    status, why = refused
    response = make_response(f"{status} {why}\n", status)
    response.content_type = "text/plain; charset=utf-8"
    return response


def _session() -> None:
    g.session = current().guard.session_nonce(request.cookies.get(SESSION_COOKIE))


def _input() -> None:
    """Every page's query and every form, checked as sent, before any view reads them."""
    check_query(request.query_string, "query parameter")
    if request.method == "POST" and request.mimetype == "application/x-www-form-urlencoded":
        check_query(request.get_data(cache=True), "form field")


def _common() -> dict[str, Any]:
    board = current()
    guard = board.guard
    return {
        "mode": guard.mode,
        "signed_in": g.session is not None,
        "csrf": guard.csrf_token(g.session) if g.session else "",
        "nonce": g.nonce,
        "refresh": board.refresh,
        "database": str(board.backend.url),
        "note": signed_note(guard),
    }


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


def _bad_input(exc: ConfigError) -> tuple[str, int]:
    return render_template("error.html", title="Bad request", message=str(exc)), 400


def _refused(exc: HTTPException) -> tuple[str, int]:
    return render_template("error.html", title=exc.name, message=exc.description), exc.code or 500


def _database_down(exc: BackendUnavailable) -> tuple[str, int]:
    return render_template("error.html", title="Database unreachable", message=str(exc)), 503


def _add_filters(app: Flask) -> None:
    app.jinja_env.filters["age"] = lambda seconds: "-" if seconds is None else format_duration(float(seconds))
    app.jinja_env.filters["when"] = _when
    app.jinja_env.filters["due"] = _due
    app.jinja_env.filters["size"] = _size
    app.jinja_env.filters["percent"] = percent  # a job's progress (batchq.jobs.reporting)


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
