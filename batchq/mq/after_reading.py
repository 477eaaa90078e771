"""After reading: delete or archive a message (a read_ct makes it a receipt), hide it longer
(set_vt), withdraw one nobody holds (cancel), or look at one (get)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..backends import Row
from ..backends.appconn import takes_app_conn
from ..errors import ConfigError, MessageHeld
from .checks import _when
from .core import MessageQueueCore, When
from .records import Message, _message


class AfterReading(MessageQueueCore):
    @takes_app_conn
    def delete(self, queue: str, msg_id: int, *, read_ct: int | None = None, conn: Any = None) -> bool:
        """Remove a message for good; False when it was gone already.

        With ``read_ct`` (the message's, from ``read``) it is a receipt: False, and nothing
        deleted, when the hold ran out and another reader has read the message since. A queue
        registered by plain SQL under a name today's rules refuse is found too (a clean-up path).
        """
        params = self._cleanup_params(queue, msg_id, read_ct, conn)
        return self._on(conn, lambda conn: self._delete_one(params, conn), transaction=False)

    @takes_app_conn
    def delete_batch(self, queue: str, msg_ids: Iterable[int], *, conn: Any = None) -> list[int]:
        """Remove several messages in one transaction; returns the ids that were there."""
        return self._each(queue, msg_ids, self._delete_one, conn)

    @takes_app_conn
    def archive(self, queue: str, msg_id: int, *, read_ct: int | None = None, conn: Any = None) -> bool:
        """Move a message to the archive (kept, with ``archived_at``); False when it was gone.

        ``read_ct`` is a receipt, as for ``delete``; any name a queue has is found, as for ``delete``.
        """
        params = self._cleanup_params(queue, msg_id, read_ct, conn)
        return self._on(conn, lambda conn: self._archive_one(params, conn))

    def _cleanup_params(self, queue: str, msg_id: int, read_ct: int | None, conn: Any) -> dict[str, Any]:
        """_message_params, or for a name today's rules refuse, the name of a queue that has it
        (an operator clearing a queue written by plain SQL); else the bad name's error."""
        try:
            return self._message_params(queue, msg_id, read_ct)
        except ConfigError:
            valid = self._message_params("q", msg_id, read_ct)  # the id and receipt still checked
            return {**valid, "queue": self._existing(queue, conn)}

    @takes_app_conn
    def archive_batch(self, queue: str, msg_ids: Iterable[int], *, conn: Any = None) -> list[int]:
        """Archive several messages in one transaction; returns the ids that were there."""
        return self._each(queue, msg_ids, self._archive_one, conn)

    def _delete_one(self, params: dict[str, Any], conn: Any) -> bool:
        return self.backend.stores.messages.delete(params["queue"], params["id"], params["read_ct"], conn)

    def _archive_one(self, params: dict[str, Any], conn: Any) -> bool:
        return self.backend.stores.messages.archive(params["queue"], params["id"], params["read_ct"], conn)

    def _each(
        self,
        queue: str,
        msg_ids: Iterable[int],
        action: Callable[[dict[str, Any], Any], bool],
        conn: Any,
    ) -> list[int]:
        """Apply a per-message action to many ids in one transaction, in id order (no deadlocks)."""
        batch = [self._message_params(queue, msg_id) for msg_id in sorted(set(msg_ids))]
        if not batch:
            return []
        return self._on(conn, lambda conn: [params["id"] for params in batch if action(params, conn)])

    @takes_app_conn
    def set_vt(
        self, queue: str, msg_id: int, vt: When, *, read_ct: int | None = None, conn: Any = None
    ) -> Message | None:
        """Hide a message until ``vt`` seconds from now (0: visible now), or until ``vt`` as an
        aware datetime (on the server's clock; a past time is now); None when it is gone.

        ``read_ct`` is a receipt, as for ``delete``: None when someone else has read it since.
        """
        when = _when(vt, "vt")
        params = self._message_params(queue, msg_id, read_ct)
        store = self.backend.stores.messages

        def update(conn: Any) -> Row | None:
            return store.set_vt(
                queue, msg_id, delay=when["delay"], at=when["at"], read_ct=params["read_ct"], conn=conn
            )

        row = self._on(conn, update)
        return None if row is None else _message(row)

    def cancel(self, queue: str, msg_id: int) -> bool:
        """Withdraw a message that no consumer holds (visible, or delayed and never read).

        True: removed. False: no such message (deleted, archived or popped already).
        Raises MessageHeld when a reader holds it: its visibility has not run out yet.
        """
        self._message_params(queue, msg_id)
        store = self.backend.stores.messages
        for _ in range(3):  # a hold can run out between the refused delete and the look
            if store.cancel(queue, msg_id):
                return True
            held = store.held(queue, msg_id)
            if held is None:
                return False
            if held > 0:
                raise MessageHeld(
                    f"message {msg_id} of queue {queue!r} is held by a consumer for another "
                    f"{held:.1f}s: not cancelled (delete it, or cancel once its visibility runs out)"
                )
        return False

    @takes_app_conn
    def get(self, queue: str, msg_id: int, *, conn: Any = None) -> Message | None:
        """A message as it stands, without reading it (no lock, read_ct unchanged)."""
        self._message_params(queue, msg_id)
        row = self.backend.stores.messages.message(queue, msg_id, conn)
        return None if row is None else _message(row)
