"""The schedule table's operations (batchq.jobs.schedules): define, pause, list, and tick's
compare-and-set. Statements in ``sql/<dialect>/schedules.sql``.

Times travel as whole seconds since the epoch (UTC). Rows are returned as read: a schedule row
written by hand may hold anything, and batchq.jobs.schedules reports what is wrong with it.
"""

from __future__ import annotations

from typing import Any

from ..core.stored import Row
from .base import Store


class ScheduleStore(Store):
    """Schedules: rows of ``batchq_schedule``, by name."""

    def server_now(self) -> float:
        """The database server's clock, in seconds since the epoch."""
        row = self.db.fetchone("schedule_server_now")
        assert row is not None
        return float(row["now"])

    def all(self) -> list[Row]:
        """Every schedule's row, by name."""
        return self.db.fetchall("schedules_all")

    def due(self) -> list[Row]:
        """The enabled schedules whose next slot has come, each with the server's clock (now)."""
        return self.db.fetchall("schedules_due")

    def upsert(self, definition: dict[str, Any], next_exec: int) -> None:
        """Create a schedule or update its definition (the columns of DEFINITION, its name and
        payload); ``next_exec`` applies to a new one, or one whose cron or time zone changed."""
        self.db.execute("schedule_upsert", {**definition, "next_exec": next_exec})

    def delete(self, name: str) -> bool:
        return self.db.execute("schedule_delete", {"name": name}) == 1

    def pause(self, name: str) -> bool:
        return self.db.execute("schedule_pause", {"name": name}) == 1

    def resume(self, name: str, next_exec: int) -> bool:
        """Enable a paused schedule from ``next_exec``; False if none was paused."""
        return self.db.execute("schedule_resume", {"name": name, "next_exec": next_exec}) == 1

    def advance(self, name: str, seen: int, next_exec: int, exec_by: str) -> bool:
        """The compare-and-set: move next_exec from ``seen`` to ``next_exec``; False if another
        ticker moved it first (then the slot is not this ticker's to enqueue)."""
        params = {"name": name, "seen": seen, "next_exec": next_exec, "exec_by": exec_by}
        return self.db.execute("schedule_advance", params) == 1

    def ran(self, name: str, slot: int, job_id: int) -> None:
        """Record the last slot a tick enqueued, and its job."""
        self.db.execute("schedule_ran", {"name": name, "slot": slot, "job_id": job_id})
