"""What the message queue's concerns share: the queues' types as last seen, the transaction an
operation runs in, the checks of a queue name and a message id, and the overflow drop that both
a bounded send and a lowered bound (configure_queue) use."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from ..backends import OnDatabase
from ..core.config import Duration, check_queue_name, existing_queue_name
from ..errors import ConfigError, QueueNotFound
from ..policy.typed import QueueType, TypeCache

Seconds = Duration
When = Duration | datetime  # a delay, or an absolute (aware) time
T = TypeVar("T")
SENT_SHARDS = 16  # shard rows per queue's sent counter: concurrent senders rarely share one
MAX_QTY = 1000
OVERFLOW_REASON = "overflow"  # the archive's reason for a message a full drop_oldest queue dropped


class MessageQueueCore(OnDatabase):
    """The methods that more than one of MessageQueue's concerns calls."""

    @property
    def _types(self) -> TypeCache:
        """The queues' types as this object last saw them."""
        types: TypeCache | None = self.__dict__.get("_type_cache")
        if types is None:
            types = self.__dict__["_type_cache"] = TypeCache()
        return types

    def _read_type(self, queue: str, conn: Any = None) -> QueueType:
        """The queue's type as stored now (QueueNotFound if there is no queue), remembered."""
        row = self.backend.stores.messages.schema(queue, conn)
        if row is None:
            raise _missing(queue)
        return self._types.learn(queue, row["payload_schema"])

    def _existing(self, queue: str, conn: Any = None) -> str:
        """A queue that exists, by its name: a valid one, or one that a queue registered by plain
        SQL has (today's rules refuse it; batchq can still read, purge and drop it)."""

        def found(name: str) -> bool:
            return self.backend.stores.messages.exists(name, conn)

        if not found(existing_queue_name(queue, found)):
            raise _missing(queue)
        return queue

    def _on(self, conn: Any, action: Callable[[Any], T], *, transaction: bool = True) -> T:
        """Run ``action(conn)`` in the caller's transaction on ``conn``; without one, in a short
        transaction of our own (one statement: autocommit), retried on deadlocks."""
        backend = self.backend
        if conn is not None:
            return action(conn)
        if not transaction:
            return backend.retrying(lambda: action(None))

        def own() -> T:
            with backend.transaction():
                return action(None)

        return backend.retrying(own)

    @staticmethod
    def _message_params(queue: str, msg_id: int, read_ct: int | None = None) -> dict[str, Any]:
        if isinstance(msg_id, bool) or not isinstance(msg_id, int):
            raise ConfigError(f"bad message id {msg_id!r}: use the int that send() or read() returned")
        if read_ct is not None and (isinstance(read_ct, bool) or not isinstance(read_ct, int)):
            raise ConfigError(f"bad read_ct {read_ct!r}: use the read_ct of the Message that read() returned")
        return {"queue": check_queue_name(queue), "id": msg_id, "read_ct": read_ct}

    def _drop_oldest(self, queue: str, excess: int, conn: Any) -> int:
        """Archive (reason "overflow") and delete the ``excess`` oldest messages, waiting ones
        (no consumer holds them) first; returns how many."""
        return self.backend.stores.messages.drop_oldest(queue, excess, OVERFLOW_REASON, conn)


def _missing(queue: str) -> QueueNotFound:
    return QueueNotFound(f"message queue {queue!r} does not exist: create it with create_queue({queue!r})")
