"""Who may change state from the dashboard: the holder of BATCHQ_DASHBOARD_TOKEN, signed in.

Signing in (POST /login with the token) sets a session cookie: a random nonce and its HMAC under
a secret made when the process starts (a restart signs everyone out). The process also keeps
the nonces of the sessions it has open: signing out drops one, so a copy of its cookie (and
CSRF token) is refused afterwards; past MAX_SESSIONS the oldest is dropped. Every action is a POST that
needs that cookie AND a CSRF token in the form: the HMAC of the session's nonce under the same
secret, which only a page the dashboard served to that session holds. Both are compared with
hmac.compare_digest. The cookie is HttpOnly and SameSite=Strict, so another site's form never
carries it; a POST whose Origin header names another site is refused besides.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass

TOKEN_ENV = "BATCHQ_DASHBOARD_TOKEN"
SESSION_COOKIE = "batchq_dashboard_session"
MAX_SESSIONS = 1000  # open at once; only a token holder opens one


@dataclass(frozen=True)
class Mode:
    """Whether actions are on, and if not, why (shown on every page)."""

    actions: bool
    why_read_only: str = ""


class Guard:
    def __init__(self, token: str | None, read_only: bool) -> None:
        self._token = token or None
        self._secret = secrets.token_bytes(32)
        self._open: OrderedDict[str, None] = OrderedDict()  # session nonces, oldest first
        self._lock = threading.Lock()  # waitress serves requests from several threads
        if read_only:
            self.mode = Mode(False, "read-only: started with --read-only")
        elif self._token is None:
            self.mode = Mode(False, f"read-only: no {TOKEN_ENV} is set, so no action is allowed")
        else:
            self.mode = Mode(True)

    def token_matches(self, given: str) -> bool:
        return self._token is not None and _same(given, self._token)

    def new_session(self) -> str:
        nonce = secrets.token_hex(16)
        with self._lock:
            self._open[nonce] = None
            while len(self._open) > MAX_SESSIONS:
                self._open.popitem(last=False)
        return f"{nonce}.{self._mac('session', nonce)}"

    def end_session(self, nonce: str) -> None:
        """Sign a session out: its cookie and CSRF token are refused from now on."""
        with self._lock:
            self._open.pop(nonce, None)

    def session_nonce(self, cookie: str | None) -> str | None:
        """The nonce of an open session cookie this process issued, or None (absent, forged,
        signed out, or from before a restart). Always None when actions are off."""
        if not self.mode.actions or not cookie or "." not in cookie:
            return None
        nonce, mac = cookie.split(".", 1)
        if not _same(mac, self._mac("session", nonce)):
            return None
        with self._lock:
            return nonce if nonce in self._open else None

    def csrf_token(self, nonce: str) -> str:
        return self._mac("csrf", nonce)

    def csrf_matches(self, nonce: str, given: str) -> bool:
        return _same(given, self.csrf_token(nonce))

    def note_signature(self, note: str) -> str:
        """An action's note travels in the redirect's URL; only one this process signed is shown,
        so a crafted link cannot put words of its own on the dashboard's pages."""
        return self._mac("note", note)

    def note_matches(self, note: str, given: str) -> bool:
        return _same(given, self.note_signature(note))

    def _mac(self, purpose: str, nonce: str) -> str:
        return hmac.new(self._secret, f"{purpose}:{nonce}".encode(), hashlib.sha256).hexdigest()


def _same(given: str, expected: str) -> bool:
    """Compared in constant time, as bytes: compare_digest refuses str with non-ASCII text."""
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())
