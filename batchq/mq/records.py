"""What the message queue returns, and the conversions of stored values (as each dialect hands
them back) into it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..backends import Row, stored_text
from ..core.serializers import loads
from ..errors import PayloadError
from ..policy.bounds import stored_bound


@dataclass(frozen=True)
class Message:
    msg_id: int
    read_ct: int
    enqueued_at: datetime
    vt: datetime  # invisible to readers until then (UTC, the server's clock)
    message: Any
    headers: dict[str, Any] | None


@dataclass(frozen=True)
class ArchivedMessage:
    msg_id: int
    read_ct: int
    enqueued_at: datetime
    vt: datetime
    archived_at: datetime
    message: Any
    headers: dict[str, Any] | None
    reason: str | None  # None: a consumer archived it; "overflow": a full drop_oldest queue dropped it


@dataclass(frozen=True)
class QueueInfo:
    queue_name: str
    created_at: datetime
    max_length: int | None = None  # None: unbounded
    overflow: str | None = None  # "drop_oldest" or "reject" when bounded
    durable: bool = True  # False: PostgreSQL UNLOGGED (emptied by a server crash)


@dataclass(frozen=True)
class QueueMetrics:
    queue_name: str
    queue_length: int  # messages in the queue, held or not
    queue_visible_length: int  # readable now
    newest_msg_age_sec: float | None  # None when the queue is empty
    oldest_msg_age_sec: float | None
    total_messages: int  # ever sent (committed), purges and deletes notwithstanding
    scrape_time: datetime


@dataclass(frozen=True)
class Unreadable:
    """A message row that reads as no Message: written around batchq (SQLite stores anything,
    as text that is not JSON or times that are none). Readers archive it with ``reason``."""

    msg_id: int
    read_ct: int | None  # the read's receipt, when it is a number
    row: Row
    reason: str


def _message(row: Row) -> Message:
    """A row as a Message; PayloadError naming the message when a value cannot be read."""
    try:
        return Message(
            msg_id=int(row["msg_id"]),
            read_ct=int(row["read_ct"]),
            enqueued_at=_utc(row["enqueued_at"]),
            vt=_utc(row["vt"]),
            message=_json_value(row["message"]),
            headers=_json_value(row["headers"]),
        )
    except (PayloadError, ValueError, TypeError, OverflowError) as exc:
        raise PayloadError(f"message {row['msg_id']} cannot be read: {exc}") from None


def _message_or_unreadable(row: Row) -> Message | Unreadable:
    try:
        return _message(row)
    except PayloadError as exc:
        read_ct = row["read_ct"] if isinstance(row["read_ct"], int) else None
        return Unreadable(int(row["msg_id"]), read_ct, row, str(exc))


def _archived(row: Row) -> ArchivedMessage:
    """An archived row as it is: a value written around batchq that cannot be read (archived
    as unreadable by a reader, with its reason) is given as its text."""
    return ArchivedMessage(
        msg_id=int(row["msg_id"]),
        read_ct=int(row["read_ct"]) if isinstance(row["read_ct"], int) else row["read_ct"],
        enqueued_at=_utc_or_text(row["enqueued_at"]),
        vt=_utc_or_text(row["vt"]),
        archived_at=_utc_or_text(row["archived_at"]),
        message=_json_or_text(row["message"]),
        headers=_json_or_text(row["headers"]),
        reason=None if row["reason"] is None else stored_text(row["reason"]),
    )


def _json_or_text(value: str | bytes | None) -> Any:
    try:
        return _json_value(value)
    except PayloadError:
        return stored_text(value)


def _utc_or_text(value: Any) -> Any:
    try:
        return _utc(value)
    except (ValueError, TypeError):
        return stored_text(value)


def _queue_info(row: Row) -> QueueInfo:
    bound = stored_bound(row)
    return QueueInfo(
        queue_name=stored_text(row["queue_name"]),
        created_at=_utc_or_text(row["created_at"]),  # a row written by hand: its text
        max_length=None if bound is None else bound.max_length,
        overflow=None if bound is None else bound.overflow,
        durable=_is_true(row["durable"]),
    )


def _is_true(value: Any) -> bool:
    """A stored flag (PostgreSQL bool, MySQL/SQLite 0/1); NULL (no counter row) is durable."""
    return value is None or bool(value)


def _first(row: Row | None, column: str) -> Any:
    assert row is not None  # an aggregate always returns a row
    return row[column]


def _json_value(value: str | bytes | None) -> Any:
    """Every dialect hands back JSON text (PostgreSQL's queries cast jsonb to text)."""
    if value is None:
        return None
    return loads(value.encode("utf-8") if isinstance(value, str) else bytes(value), "json", None)


def _utc(value: Any) -> datetime:
    """A server time as an aware UTC datetime (MySQL: naive UTC; SQLite: UTC text). ValueError
    for what is no time (SQLite stores anything)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        raise ValueError(f"{value!r} is not a time")
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _utc_text(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)
