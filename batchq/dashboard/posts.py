"""What every POST goes through: the same-origin check, the Guard's checks (a signed-in session
and its CSRF token), and the way back to the page it came from, with a signed note."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit

from flask import abort, g, request

from .context import current
from .security import Guard


def same_origin() -> None:
    """A browser names the page a POST came from; refuse one from another site."""
    origin = request.headers.get("Origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.host:
        abort(403, f"a POST from another site ({origin}) is refused")


def check_action() -> None:
    same_origin()
    guard = current().guard
    if not guard.mode.actions:
        abort(403, guard.mode.why_read_only)
    if g.session is None:
        abort(403, "sign in with the dashboard token first")
    if not guard.csrf_matches(g.session, request.form.get("csrf", "")):
        abort(403, "the form's CSRF token is missing or wrong: reload the page and try again")


_LOCAL_PATH = re.compile(r"/(?!/)[!-\[\]-~]*")  # printable ASCII but "\\", not starting "//"


def back(default: str, **params: str) -> str:
    """Where an action returns: the page it was sent from (a path on this site), with a note in
    place of the last one."""
    target = request.form.get("back", "")
    parts = urlsplit(target)
    # A path on this site only: browsers read "//host" and "/\\host" as another site.
    if not _LOCAL_PATH.fullmatch(target) or parts.scheme or parts.netloc:
        parts = urlsplit(default)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("note", "sig")] + list(params.items())
    return parts.path + (f"?{urlencode(query)}" if query else "")


def signed_note(guard: Guard) -> str:
    """The note an action left in the URL, if this process signed it; else nothing."""
    note = request.args.get("note", "")
    return note[:300] if note and guard.note_matches(note, request.args.get("sig", "")) else ""
