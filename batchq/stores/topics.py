"""The operations of topics (batchq.mq.topics) and of routing by pattern (batchq.mq.routing):
a topic's shard rows, subscriptions, publishing a copy to every subscriber, and the bindings of
patterns to queues. Statements in ``sql/<dialect>/pubsub.sql``.

A publish locks one shard of its topic; subscribe and unsubscribe lock them all (lock_topic), so
a subscription sees exactly the publishes that commit after it. The callers hold the
transaction: each method is one step of theirs. Subscriptions and bindings come back as rows
(batchq.mq.topics and batchq.mq.routing read them, values written by hand as their text).
"""

from __future__ import annotations

from typing import Any

from ..core.stored import Row
from .base import Store


class TopicStore(Store):
    """Topics and bindings: rows of ``batchq_mq_topic``, ``batchq_mq_subscription`` and
    ``batchq_mq_binding``."""

    # -- topics and subscriptions -----------------------------------------------------------

    def create_topic(self, topic: str, shards: int) -> None:
        """The shard rows of ``topic`` where they do not exist yet."""
        rows = [{"topic": topic, "shard": shard} for shard in range(shards)]
        self.db.insert_many("pubsub_topic_shard_create", rows)

    def lock_topic(self, topic: str) -> None:
        """Lock every shard of ``topic``: waits out the publishes in flight, holds off new ones
        until commit. Inside a transaction."""
        self.db.fetchall("pubsub_topic_lock_all", {"topic": topic})

    def subscription(self, topic: str, subscriber: str) -> Row | None:
        """One subscription's row (topic, subscriber, queue, policy, max_tries, vt_seconds,
        created_at); None when there is none."""
        return self.db.fetchone("pubsub_subscription_get", {"topic": topic, "subscriber": subscriber})

    def subscriptions(self) -> list[Row]:
        """Every subscription's row, by topic and subscriber."""
        return self.db.fetchall("pubsub_subscription_list")

    def subscription_of_queue(self, queue: str, conn: Any = None) -> tuple[Any, Any] | None:
        """(topic, subscriber), as stored, of the subscription whose queue ``queue`` is; None."""
        row = self.db.fetchone("pubsub_subscription_of_queue", {"queue": queue}, conn)
        return None if row is None else (row["topic"], row["subscriber"])

    def subscribe(
        self, topic: str, subscriber: str, queue: str, *, policy: str, max_tries: int, vt: float
    ) -> None:
        """A new subscription, with its delivery settings (its queue is the caller's to create)."""
        params = {"topic": topic, "subscriber": subscriber, "queue": queue}
        self.db.execute(
            "pubsub_subscription_insert", {**params, "policy": policy, "max_tries": max_tries, "vt": vt}
        )

    def change(self, topic: str, subscriber: str, *, policy: str, max_tries: int, vt: float) -> None:
        """A subscription's delivery settings."""
        params = {
            "topic": topic,
            "subscriber": subscriber,
            "policy": policy,
            "max_tries": max_tries,
            "vt": vt,
        }
        self.db.execute("pubsub_subscription_update", params)

    def unsubscribe(self, topic: str, subscriber: str) -> bool:
        """Delete a subscription (not its queue); False when there was none."""
        return self.db.execute("pubsub_subscription_delete", {"topic": topic, "subscriber": subscriber}) == 1

    # -- publishing ---------------------------------------------------------------------------

    def check_publish_size(self, publish: dict[str, Any], conn: Any = None) -> None:
        """PayloadError, before anything is written, if the publish's statement is more than the
        server accepts (MySQL); ``publish`` as ``publish`` takes it."""
        self.db.check_statement_sizes("pubsub_publish", [publish], conn)

    def publish(
        self,
        topic: str,
        shard: int,
        message: str,
        headers: str | None,
        delay: float,
        conn: Any = None,
    ) -> int:
        """One copy of ``message`` (JSON text) into the queue of every subscription of ``topic``,
        in three statements whatever their number: lock shard ``shard`` of the topic (the
        subscriptions cannot change until commit), count, copy; how many copies (0: nobody ever
        subscribed). Inside a transaction."""
        row = {"topic": topic, "shard": shard, "message": message, "headers": headers, "delay": delay}
        if self.db.execute("pubsub_publish_lock", row, conn=conn) != 1:
            return 0  # nobody ever subscribed: nothing to lock, nothing to deliver
        self.db.execute("pubsub_publish_count", row, conn=conn)
        return self.db.execute("pubsub_publish", row, conn=conn)

    # -- bindings (routing by pattern) --------------------------------------------------------

    def bind(self, pattern: str, queue: str) -> bool:
        """Bind ``pattern`` to ``queue`` (whose row the caller has locked); False when bound."""
        return self.db.execute("mq_binding_insert", {"pattern": pattern, "queue": queue}) == 1

    def unbind(self, pattern: str, queue: str) -> bool:
        """Remove a binding; False when there was none."""
        params = {"pattern": pattern, "queue": queue}
        return self.db.retrying(lambda: self.db.execute("mq_binding_delete", params)) == 1

    def bindings(self, conn: Any = None) -> list[Row]:
        """Every binding's row (pattern, queue, created_at), by pattern then queue."""
        return self.db.fetchall("mq_binding_list", None, conn)

    def unbind_queue(self, queue: str, conn: Any = None) -> None:
        """drop_queue: the queue's bindings go with it."""
        self.db.execute("mq_binding_drop_queue", {"queue": queue}, conn)
