"""What a page link or a form may carry, checked before any view reads it: a hand-edited link
gets a 400 that names the parameter and the problem, never a 500 from a driver.

Werkzeug decodes bad UTF-8 into U+FFFD silently and lets NUL through (PostgreSQL refuses NUL in
text; SQLite cannot bind an integer beyond 64 bits), so the raw query string and form body are
checked here, once, for every page and action.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import unquote_to_bytes

from ..errors import ConfigError

VALUE_MAX_CHARS = 1024  # far beyond any queue (64), task (255) or time a link carries
INT64_RANGE = (-(2**63), 2**63 - 1)  # what every backend binds; a row's id and priority fit
_INTEGER = re.compile(r"-?[0-9]{1,19}")


def check_query(raw: bytes, what: str) -> None:
    """ConfigError if a field of an urlencoded query or form is not UTF-8, holds a NUL, or is
    longer than VALUE_MAX_CHARS."""
    for field in raw.split(b"&"):
        name, _, value = (unquote_to_bytes(part.replace(b"+", b" ")) for part in field.partition(b"="))
        shown = name.decode("utf-8", "replace")[:40]
        for part in (name, value):
            try:
                text = part.decode("utf-8")
            except UnicodeDecodeError:
                raise ConfigError(f"bad {what} {shown!r}: it is not UTF-8 text; fix or drop it") from None
            if "\x00" in text:
                raise ConfigError(f"bad {what} {shown!r}: it holds a NUL character; fix or drop it")
            if len(text) > VALUE_MAX_CHARS:
                raise ConfigError(
                    f"bad {what} {shown!r}: {len(text)} characters, more than the "
                    f"{VALUE_MAX_CHARS} any link of the dashboard carries; shorten it"
                )


def integer(
    params: Mapping[str, str], name: str, bounds: tuple[int, int] = INT64_RANGE, hint: str = ""
) -> int:
    """The whole number ``params[name]`` as a link writes it (digits, an optional "-"), within
    ``bounds``; ConfigError otherwise, ending with ``hint``."""
    text = params.get(name, "")
    low, high = bounds
    if not _INTEGER.fullmatch(text) or not low <= int(text) <= high:
        raise ConfigError(f"bad {name} {text[:40]!r}: use a whole number from {low} to {high}{hint}")
    return int(text)
