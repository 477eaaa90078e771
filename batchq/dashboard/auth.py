"""Signing in and out: the dashboard token buys a session cookie (batchq.dashboard.security)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, g, redirect, render_template, request

from .context import current
from .posts import back, check_action, same_origin
from .security import SESSION_COOKIE

blueprint = Blueprint("auth", __name__)


@blueprint.get("/login")
def login_form() -> str:
    return render_template("login.html", title="Sign in", failed=False)


@blueprint.post("/login")
def login() -> Any:
    same_origin()
    guard = current().guard
    if not guard.mode.actions:
        abort(403, guard.mode.why_read_only)
    if not guard.token_matches(request.form.get("token", "")):
        return render_template("login.html", title="Sign in", failed=True), 403
    response = redirect(back("/"), 303)
    response.set_cookie(SESSION_COOKIE, guard.new_session(), httponly=True, samesite="Strict", path="/")
    return response


@blueprint.post("/logout")
def logout() -> Any:
    check_action()
    current().guard.end_session(g.session)  # a copy of the cookie is refused from now on
    response = redirect("/", 303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="Strict")
    return response
