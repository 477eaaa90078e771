"""The operator's view of the message queues: per queue its figures and settings, and its
messages as they stand (a peek reads nothing: no read_ct bump, no vt change).

Read by `batchq mq list/stats/peek`, `batchq stats`, `batchq metrics` and the dashboard, with
plain SELECTs in autocommit (``backend.stores.message_views``: the named queries of
``sql/<dialect>/mqview.sql``), ages on the database server's clock. A row written around
batchq (a BLOB for a name, a message that is no JSON, a time that is no time) is shown as its
text, never raised.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ..backends import Backend, Row, stored_count, stored_seconds, stored_text
from ..errors import ConfigError
from ..policy.bounds import stored_bound
from ..policy.settings import schema_name, stored_schema
from .records import _is_true, _json_or_text, _utc_or_text

PAGE_SIZE = 50  # messages per page of a queue (`mq peek QUEUE`, the dashboard)
PAGE_MAX = 1000
MSG_ID_RANGE = (1, 2**63 - 1)


@dataclass
class Subscribed:
    """The subscription whose queue this is (a topic's copies for one subscriber)."""

    topic: str
    subscriber: str
    policy: str


@dataclass
class MessageQueueFigures:
    """One message queue, as `batchq mq stats` shows it."""

    queue: str
    created_at: datetime | str | None = None
    messages: int = 0  # in the queue, held or not
    visible: int = 0  # readable now (vt <= now)
    delayed: int = 0  # not yet visible, never read: a send's delay
    held: int = 0  # not visible, read: a consumer holds it (in flight)
    redelivered: int = 0  # read more than once: a consumer's hold ran out before it finished
    oldest_age_seconds: float | None = None  # the oldest message's age (None: empty, or no time)
    max_id: int = 0  # the newest message's id (0: empty): what a purge confirmed by a human reaches
    archived: int = 0  # in the archive
    sent: int = 0  # ever sent (committed): the queue's sent counter
    max_length: int | None = None  # None: unbounded
    overflow: str | None = None
    durable: bool = True
    schema: dict[str, Any] | str | None = None  # the type (a JSON Schema; its text if it is none)
    subscription: Subscribed | None = None

    @property
    def invisible(self) -> int:
        return self.delayed + self.held

    @property
    def type_name(self) -> str | None:
        return schema_name(self.schema)

    def settings(self) -> dict[str, Any]:
        """The settings that are set (what `stats` names per queue)."""
        found: dict[str, Any] = {}
        if self.max_length is not None:
            found["max_length"] = self.max_length
            found["overflow"] = self.overflow
        if not self.durable:
            found["durable"] = False
        if self.schema is not None:
            found["type"] = self.type_name
        return found

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["invisible"] = self.invisible
        data["type"] = self.type_name
        return data


@dataclass
class PeekedMessage:
    """A message as it stands; values a row written by hand holds that cannot be read are text."""

    msg_id: int
    read_ct: int | str | None
    enqueued_at: datetime | str | None
    vt: datetime | str | None
    vt_in_seconds: float | None  # how far ahead vt is (<= 0: visible); None: no time
    message: Any
    headers: Any
    state: str  # visible, delayed (never read), held (read: a consumer has it)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def queue_figures(backend: Backend, queue: str | None = None) -> list[MessageQueueFigures]:
    """Every message queue's figures (or ``queue``'s: [] when there is none), by name. Rows of
    queues that are not registered (written by plain SQL) are left out, as `list_queues` does."""
    views = backend.stores.message_views
    by_name: dict[str, MessageQueueFigures] = {}
    for row in views.queues(queue):
        name = stored_text(row["queue_name"])
        bound = stored_bound(row)
        by_name[name] = MessageQueueFigures(
            queue=name,
            created_at=_utc_or_text(row["created_at"]),
            sent=stored_count(row["sent"]),
            max_length=None if bound is None else bound.max_length,
            overflow=None if bound is None else bound.overflow,
            durable=_is_true(row["durable"]),
            schema=stored_schema(row["payload_schema"]),
        )
    for row in views.message_counts(queue):
        found = by_name.get(stored_text(row["queue"]))
        if found is not None:
            found.messages = stored_count(row["length"])
            found.visible = stored_count(row["n_visible"])
            found.delayed = stored_count(row["n_delayed"])
            found.held = stored_count(row["n_held"])
            found.redelivered = stored_count(row["redelivered"])
            found.max_id = stored_count(row["max_id"])
            found.oldest_age_seconds = stored_seconds(row["oldest_age_seconds"])
    for row in views.archive_counts(queue):
        found = by_name.get(stored_text(row["queue"]))
        if found is not None:
            found.archived = stored_count(row["archived"])
    for row in backend.stores.topics.subscriptions():
        found = by_name.get(stored_text(row["queue"]))
        if found is not None:
            found.subscription = Subscribed(
                stored_text(row["topic"]), stored_text(row["subscriber"]), stored_text(row["policy"])
            )
    return [by_name[name] for name in sorted(by_name)]


def check_msg_id(value: Any) -> int:
    low, high = MSG_ID_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"bad message id {value!r}: use a whole number from 1 to {MSG_ID_RANGE[1]}")
    return value


def message_page(
    backend: Backend, queue: str, *, after: int = 0, limit: int = PAGE_SIZE
) -> list[PeekedMessage]:
    """A page of ``queue``'s messages in id order after ``after``, as they stand."""
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise ConfigError(f"bad after {after!r}: use 0 or the id of the last message of a page")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= PAGE_MAX:
        raise ConfigError(f"bad limit {limit!r}: use a whole number from 1 to {PAGE_MAX}")
    rows = backend.stores.message_views.page(queue, after, limit)
    return [_peeked(row) for row in rows]


def peek(backend: Backend, queue: str, msg_id: int) -> PeekedMessage | None:
    """One message as it stands, without reading it; None when the queue has no such message."""
    row = backend.stores.message_views.message(queue, check_msg_id(msg_id))
    return None if row is None else _peeked(row)


def _peeked(row: Row) -> PeekedMessage:
    read_ct = row["read_ct"]
    ahead = _seconds_or_infinity(row["vt_in_seconds"])
    # A vt that is no time at all (SQLite text) is visible to readers; PostgreSQL's infinity is not.
    state = "visible" if ahead is None or ahead <= 0 else "delayed" if read_ct == 0 else "held"
    return PeekedMessage(
        state=state,
        msg_id=int(row["msg_id"]),
        read_ct=read_ct if isinstance(read_ct, int) or read_ct is None else stored_text(read_ct),
        enqueued_at=_utc_or_text(row["enqueued_at"]),
        vt=_utc_or_text(row["vt"]),
        vt_in_seconds=stored_seconds(row["vt_in_seconds"]),
        message=_stored_json(row["message"]),
        headers=_stored_json(row["headers"]),
    )


def _seconds_or_infinity(value: Any) -> float | None:
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(seconds) else seconds


def _stored_json(value: Any) -> Any:
    """JSON text as its value; anything else (no JSON, a number or BLOB written by hand) as text."""
    if value is None or not isinstance(value, (str, bytes, bytearray, memoryview)):
        return value if value is None else stored_text(value)
    return _json_or_text(bytes(value) if not isinstance(value, str) else value)


def purge_up_to(backend: Backend, queue: str, up_to: int) -> int:
    """Delete the queue's messages (held or not) with ids up to ``up_to``, the newest a person was
    shown when they confirmed; returns how many. One statement: the archive stays."""
    if isinstance(up_to, bool) or not isinstance(up_to, int) or not 0 <= up_to <= MSG_ID_RANGE[1]:
        raise ConfigError(f"bad up_to {up_to!r}: use the newest message id the confirmation showed")
    return backend.stores.message_views.purge_up_to(queue, up_to)
