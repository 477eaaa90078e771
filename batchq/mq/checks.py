"""The checks and conversions of what a caller passes, before anything is written: messages
and headers as JSON text, sizes, types, read filters, delays and times."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.config import aware_epoch, counted, parse_when
from ..core.serializers import dumps, numbered, which_of
from ..errors import ConfigError, PayloadError
from ..policy.typed import QueueType
from .core import When


def _json_text(value: Any, what: str) -> str:
    """JSON text of a message or headers; raises PayloadError before anything is written."""
    data = dumps(value, "json", None)
    if data is None:  # dumps keeps None as SQL NULL; a message of null is the JSON null
        return "null"
    if what == "headers" and not data.startswith(b"{"):
        raise PayloadError("headers must be a JSON object (a dict)")
    return data.decode("utf-8")


def _json_texts(values: list[Any]) -> list[str]:
    """send_batch's messages as JSON text; an error says which message ("message 2 of 3")."""
    texts = []
    for index, value in enumerate(values):
        try:
            texts.append(_json_text(value, "message"))
        except PayloadError as exc:
            raise numbered(exc, "message", index, len(values)) from None
    return texts


def _check_sizes(rows: list[dict[str, Any]], limit: int) -> None:
    """Refuse a message larger than batchq stores, before sending anything."""
    for index, row in enumerate(rows):
        size = len(row["message"].encode("utf-8"))
        if size > limit:
            raise PayloadError(
                f"{which_of('message', index, len(rows))} is {size:,} bytes of JSON, more than this "
                f"database accepts ({limit:,} bytes): store large data elsewhere and send a reference to it"
            )


def _headers_per_message(
    headers: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None, count: int
) -> list[str | None]:
    """send_batch's headers as JSON text, one per message: a list gives each its own, one dict all."""
    if headers is None:
        return [None] * count
    if isinstance(headers, Mapping):
        return [_json_text(dict(headers), "headers")] * count
    if isinstance(headers, (str, bytes)) or not isinstance(headers, Sequence):
        raise ConfigError(f"bad headers {headers!r}: use a dict, or a list of one dict (or None) per message")
    if len(headers) != count:
        raise ConfigError(
            f"headers has {counted(len(headers), 'entry', 'entries')} for {counted(count, 'message')}: "
            "give one dict (or None) per message"
        )
    return [None if head is None else _json_text(_header_dict(head), "headers") for head in headers]


def _header_dict(head: Any) -> dict[str, Any]:
    if not isinstance(head, Mapping):
        raise PayloadError("headers must be a JSON object (a dict)")
    return dict(head)


def _check_type(known: QueueType, queue: str, rows: list[dict[str, Any]]) -> None:
    """Every message against the queue's type, before anything is written (PayloadInvalid)."""
    if known.text is None or (len(rows) > 1 and known.fits_all([row["message"] for row in rows])):
        return
    for index, row in enumerate(rows):
        which = which_of("message", index, len(rows))
        known.check(row["message"], f"{which} does not match the type of queue {queue!r}: ")


def _filter_text(where: Mapping[str, Any]) -> str:
    """A read filter: a JSON object of objects and scalars, portable to every backend."""
    if not isinstance(where, Mapping):
        raise ConfigError(f"bad where {where!r}: use a dict, as in where={{'kind': 'mail'}}")
    _check_filter(where)
    return _json_text(dict(where), "where")


def _filter_paths(node: Mapping[str, Any], path: str = "$") -> list[str]:
    """The JSON path of every node of a filter, the root first (keys hold no quote or backslash)."""
    paths = [path]
    for key, value in node.items():
        child = f'{path}."{key}"'
        paths.extend(_filter_paths(value, child) if isinstance(value, Mapping) else [child])
    return paths


def _check_filter(node: Mapping[str, Any]) -> None:
    for key, value in node.items():
        if not isinstance(key, str) or '"' in key or "\\" in key:
            raise ConfigError(f"bad where key {key!r}: use strings without quotes or backslashes")
        if isinstance(value, Mapping):
            _check_filter(value)
        elif isinstance(value, (list, tuple)):
            # Array containment differs between PostgreSQL, MySQL and SQLite JSON functions.
            raise ConfigError(f"where[{key!r}] is a list: filters match objects and scalars only")


def _when(value: When | None, what: str) -> dict[str, Any]:
    """A delay in seconds, or an absolute time as Unix seconds (the SQL keeps the later of it and
    the server's now): {"delay": ..., "at": ...}, read as a job's delay is (parse_when)."""
    delay, at = parse_when(value, what)
    return {"delay": delay, "at": at}


_epoch = aware_epoch  # since/until of read_archive
