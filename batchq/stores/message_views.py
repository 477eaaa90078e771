"""The operator's views of the message queues (batchq.mq.overview: `batchq mq list/stats/peek`,
`batchq stats`, `batchq metrics`, the dashboard): plain SELECTs in autocommit, ages on the
database server's clock, and the purge of what an operator was shown. Statements in
``sql/<dialect>/mqview.sql``. Rows as stored: the overview shows a value written by hand as its text.
"""

from __future__ import annotations

from ..core.stored import Row
from .base import Store


class MessageViewStore(Store):
    """What the operator's views read of ``batchq_mq_meta``, ``batchq_mq_sent``,
    ``batchq_message`` and ``batchq_message_archive``."""

    def queues(self, queue: str | None = None) -> list[Row]:
        """Every registered queue (or ``queue``) by name: queue_name, created_at, payload_schema,
        max_length, overflow, durable, and sent (ever, committed)."""
        return self.db.fetchall("mqview_queues", {"queue": queue})

    def message_counts(self, queue: str | None = None) -> list[Row]:
        """Per queue with messages (or ``queue``): length, n_visible, n_delayed, n_held,
        redelivered, oldest_age_seconds, max_id."""
        return self.db.fetchall("mqview_messages", {"queue": queue})

    def archive_counts(self, queue: str | None = None) -> list[Row]:
        """Per queue with an archive (or ``queue``): archived."""
        return self.db.fetchall("mqview_archive", {"queue": queue})

    def page(self, queue: str, after: int, limit: int) -> list[Row]:
        """Up to ``limit`` of the queue's messages after id ``after``, in id order, as they stand
        (nothing read), with vt_in_seconds (how far ahead vt is)."""
        return self.db.fetchall("mqview_page", {"queue": queue, "after": after, "limit": limit})

    def message(self, queue: str, msg_id: int) -> Row | None:
        """One message as ``page`` gives it; None when the queue has no such message."""
        return self.db.fetchone("mqview_message", {"queue": queue, "id": msg_id})

    def purge_up_to(self, queue: str, up_to: int) -> int:
        """Delete the queue's messages (held or not) with ids up to ``up_to``; how many."""
        params = {"queue": queue, "up_to": up_to}
        return self.db.retrying(lambda: self.db.execute("mqview_purge_up_to", params))
