"""Topic routing by pattern (PGMQ's bind_topic, send_topic): MessageQueue.bind_topic...

A binding ties a pattern to an existing message queue; ``send_topic(routing_key, msg)`` puts
one copy of the message into every queue with a binding whose pattern matches the key (one
copy per queue however many of its patterns match), in one transaction: all or none.

Keys and patterns are dot-separated words (letters, digits, '_', '-'), as in PGMQ and AMQP
topic exchanges. In a pattern, ``*`` is exactly one word and ``#`` any run of characters
(so ``logs.#`` matches ``logs.error`` and ``logs.api.error`` but not ``logs``; ``#`` alone
matches every key). The pattern compiles to the regular expression PGMQ stores for it, and
batchq matches it in Python, so every backend routes alike.

This is beside the exact-name topics of batchq.mq.topics (subscribe / publish), whose
subscriptions own their queues; a binding only points at a queue that exists on its own, and
drop_queue removes the queue's bindings with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..backends import Row, stored_text
from ..backends.appconn import takes_app_conn
from ..core.config import check_queue_name
from ..errors import ConfigError, QueueNotFound
from .checks import _headers_per_message, _json_texts
from .core import When, _missing
from .records import _utc_or_text

if TYPE_CHECKING:
    from . import MessageQueue

MAX_KEY_LENGTH = 255
_KEY_CHARS = re.compile(r"[A-Za-z0-9._-]+")
_PATTERN_CHARS = re.compile(r"[A-Za-z0-9._*#-]+")


@dataclass(frozen=True)
class TopicBinding:
    pattern: str
    queue: str
    created_at: datetime


# -- checks ------------------------------------------------------------------------------


def check_routing_key(key: str) -> str:
    """A routing key as PGMQ's validate_routing_key accepts it, else ConfigError."""
    _check_words(key, "routing key", _KEY_CHARS, "letters, digits, '.', '-' and '_' (no wildcards)")
    return key


def check_pattern(pattern: str) -> str:
    """A binding's pattern as PGMQ's validate_topic_pattern accepts it, else ConfigError."""
    _check_words(pattern, "topic pattern", _PATTERN_CHARS, "letters, digits, '.', '-', '_', '*' and '#'")
    for bad in ("**", "##", "*#", "#*"):
        if bad in pattern:
            raise ConfigError(
                f"bad topic pattern {pattern!r}: it contains {bad!r}; one wildcard per word ('#' "
                "already spans several words)"
            )
    return pattern


def _check_words(text: str, what: str, chars: re.Pattern[str], allowed: str) -> None:
    if not isinstance(text, str) or not text:
        raise ConfigError(f"bad {what} {text!r}: give a non-empty string")
    if len(text) > MAX_KEY_LENGTH:
        raise ConfigError(f"bad {what}: {len(text)} characters, at most {MAX_KEY_LENGTH}")
    if not chars.fullmatch(text):
        raise ConfigError(f"bad {what} {text!r}: it has invalid characters; use {allowed}")
    if text.startswith(".") or text.endswith(".") or ".." in text:
        raise ConfigError(f"bad {what} {text!r}: dots separate words: none first, last or doubled")


@lru_cache(maxsize=4096)
def compiled(pattern: str) -> re.Pattern[str]:
    """The pattern as PGMQ compiles it: '*' one word ([^.]+), '#' anything (.*), all else literal."""
    return re.compile("".join("[^.]+" if c == "*" else ".*" if c == "#" else re.escape(c) for c in pattern))


def matches(pattern: str, routing_key: str) -> bool:
    return compiled(pattern).fullmatch(routing_key) is not None


# -- bindings -----------------------------------------------------------------------------


def bind_topic(mq: MessageQueue, pattern: str, queue: str) -> bool:
    """Bind ``pattern`` to the existing ``queue``: True when new, False when it was bound."""
    check_pattern(pattern)
    check_queue_name(queue)
    backend = mq.backend

    def bind() -> bool:
        with backend.transaction():
            # The queue's row lock: a drop_queue in flight either ends first (not found) or
            # waits for this binding, which it then removes.
            if not backend.stores.messages.lock(queue):
                raise _missing(queue)
            return backend.stores.topics.bind(pattern, queue)

    return backend.retrying(bind)


def unbind_topic(mq: MessageQueue, pattern: str, queue: str) -> bool:
    """Remove one binding; False when there was none."""
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"bad topic pattern {pattern!r}: give a non-empty string")
    return mq.backend.stores.topics.unbind(pattern, check_queue_name(queue))


def list_topic_bindings(mq: MessageQueue, queue: str | None = None, conn: Any = None) -> list[TopicBinding]:
    """Every binding (of ``queue``), by pattern then queue."""
    if queue is not None:
        check_queue_name(queue)
    found = [_binding(row) for row in mq.backend.stores.topics.bindings(conn)]
    return [b for b in found if queue is None or b.queue == queue]


def test_routing(mq: MessageQueue, routing_key: str, conn: Any = None) -> list[TopicBinding]:
    """The bindings whose pattern matches ``routing_key``: where send_topic would deliver."""
    check_routing_key(routing_key)
    return [b for b in list_topic_bindings(mq, conn=conn) if matches(b.pattern, routing_key)]


test_routing.__test__ = False  # type: ignore[attr-defined]  # not a pytest test, whoever imports it


def _binding(row: Row) -> TopicBinding:
    return TopicBinding(
        pattern=stored_text(row["pattern"]),
        queue=stored_text(row["queue"]),
        created_at=_utc_or_text(row["created_at"]),
    )


# -- sending --------------------------------------------------------------------------------


@takes_app_conn
def send_batch_topic(
    mq: MessageQueue,
    routing_key: str,
    msgs: Iterable[Any],
    *,
    delay: When | None = None,
    headers: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
    conn: Any = None,
) -> list[tuple[str, int]]:
    """Send ``msgs`` to every queue bound to a pattern matching ``routing_key``, in one
    transaction (the caller's with ``conn=``); returns (queue, msg_id) pairs, by queue then id."""
    check_routing_key(routing_key)
    messages = list(msgs)
    if not messages:
        raise ConfigError("send_batch_topic needs at least one message")
    _json_texts(messages)  # a bad message or header fails here, before anything is written,
    _headers_per_message(headers, len(messages))  # matched or not
    if conn is not None:
        return _send_to_matches(mq, routing_key, messages, delay, headers, conn)
    backend = mq.backend

    def own_transaction() -> list[tuple[str, int]]:
        with backend.transaction():
            return _send_to_matches(mq, routing_key, messages, delay, headers, None)

    return backend.retrying(own_transaction)


def _send_to_matches(
    mq: MessageQueue,
    routing_key: str,
    messages: list[Any],
    delay: When | None,
    headers: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None,
    conn: Any,
) -> list[tuple[str, int]]:
    """send_batch to each matching queue in name order (so concurrent senders lock alike). A
    queue dropped since its binding was read is passed over: its binding went with it."""
    queues = sorted({b.queue for b in test_routing(mq, routing_key, conn)})
    sent: list[tuple[str, int]] = []
    for queue in queues:
        try:
            ids = mq.send_batch(queue, messages, delay=delay, headers=headers, conn=conn)
        except QueueNotFound:
            continue
        sent.extend((queue, msg_id) for msg_id in ids)
    return sent
