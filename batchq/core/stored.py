"""Values read from a row, whatever the row holds: the shapes every store and reader share.

SQLite lets a row written by hand hold any type in any column, and MySQL returns naive UTC
times: these turn what a row gives into what Python code can rely on. A leaf module (it imports
nothing of batchq), so that the connection and the stores above it can both use it.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

Row = dict[str, Any]


def stored_count(value: Any) -> int:
    """A count read from a row as an int, 0 if it is none: SQLite lets a row written by hand
    hold any type in any column, and a worker or sweep must not fail on it."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def stored_text(value: Any) -> str:
    """A text read from a row as str: bytes (a BLOB written by hand on SQLite) decoded with
    U+FFFD for what is not UTF-8, anything else as str()."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def stored_time(value: Any) -> datetime | str | None:
    """A time read from a row as an aware UTC datetime (MySQL's are naive UTC, SQLite's and the
    queries' own are UTC text); what reads as no time (written by hand) stays as its text."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        text = stored_text(value)
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            return text
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def stored_seconds(value: Any) -> float | None:
    """A number of seconds read from a row; None if it is no finite number."""
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if math.isfinite(seconds) else None


# Progress as a job reports it and its row holds it (batchq.jobs.reporting writes, the registry reads).
PROGRESS_MESSAGE_MAX_CHARS = 200  # the progress_message column (VARCHAR(200) on MySQL)


def clean_message(text: str) -> str:
    """At most PROGRESS_MESSAGE_MAX_CHARS printable characters: cut first (a 1 MB message costs
    no more than a short one), then what is not printable (control characters, line breaks, lone
    surrogates that no database stores) made a space."""
    text = text[:PROGRESS_MESSAGE_MAX_CHARS]
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else " " for ch in text)


def stored_fraction(value: Any) -> float | None:
    """A progress column as a fraction from 0 to 1; None when it is none (NULL, or what a row
    written by hand holds: text, 5.0, -1, NaN)."""
    if value is None or isinstance(value, (str, bytes, bool)):
        return None
    try:
        fraction = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return fraction if 0.0 <= fraction <= 1.0 else None  # NaN compares False
