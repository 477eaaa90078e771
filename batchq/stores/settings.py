"""A job queue's settings as stored on its ``batchq_queue`` row (batchq.policy.settings): the
pause flag, history retention, bound, type and flow limits. Statements in ``sql/<dialect>/settings.sql``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..core.config import format_duration
from ..core.stored import stored_seconds, stored_text
from .base import Store
from .bounds import stored_bound
from .flow import Rate, stored_limits


@dataclass
class JobQueueSettings:
    queue: str
    paused: bool = False
    keep_for_seconds: float | None = None  # None: finished jobs are not kept
    max_length: int | None = None  # None: unbounded
    overflow: str | None = None
    schema: dict[str, Any] | str | None = None  # the type; its text when it is no JSON object
    rate: Rate | None = None  # None: no rate limit (batchq.policy.flow)
    max_running: int | None = None  # None: no running limit

    @property
    def type_name(self) -> str | None:
        return schema_name(self.schema)

    def settings(self) -> dict[str, Any]:
        """The settings that are set, by name (`stats` lists them per queue)."""
        found: dict[str, Any] = {}
        if self.paused:
            found["paused"] = True
        if self.keep_for_seconds is not None:
            found["keep_for"] = format_duration(self.keep_for_seconds)
        if self.max_length is not None:
            found["max_length"] = self.max_length
            found["overflow"] = self.overflow
        if self.schema is not None:
            found["type"] = self.type_name
        if self.rate is not None:
            found["rate"] = str(self.rate)
        if self.max_running is not None:
            found["max_running"] = self.max_running
        return found

    def as_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "paused": self.paused,
            "keep_for_seconds": self.keep_for_seconds,
            "max_length": self.max_length,
            "overflow": self.overflow,
            "type": self.type_name,
            "schema": self.schema,
            "rate": None if self.rate is None else str(self.rate),
            "rate_limit": None if self.rate is None else self.rate.limit,
            "rate_period_seconds": None if self.rate is None else self.rate.period,
            "max_running": self.max_running,
        }


class SettingsStore(Store):
    """Job queues' settings, read (setting them stays with the APIs that own them)."""

    def job_queues(self, queue: str | None = None) -> dict[str, JobQueueSettings]:
        """The settings of every job queue that has any row (or of ``queue``), by name; a queue
        with no row has none set (the defaults: running, no history, unbounded, untyped)."""
        found = {}
        for row in self.db.fetchall("settings_job_queues", {"queue": queue}):
            if row["name"] is None:
                continue  # a row written by hand
            bound = stored_bound(row)
            limits = stored_limits(row)
            name = stored_text(row["name"])
            found[name] = JobQueueSettings(
                queue=name,
                paused=bool(row["paused"]) if isinstance(row["paused"], (int, bool)) else False,
                keep_for_seconds=None if row["keep_for"] is None else stored_seconds(row["keep_for"]),
                max_length=None if bound is None else bound.max_length,
                overflow=None if bound is None else bound.overflow,
                schema=stored_schema(row["payload_schema"]),
                rate=limits.rate,
                max_running=limits.max_running,
            )
        return found


def stored_schema(value: Any) -> dict[str, Any] | str | None:
    """A stored type: the JSON Schema object, or its text when it is none (written by hand)."""
    if value is None:
        return None
    text = stored_text(value)
    try:
        schema = json.loads(text)
    except ValueError:
        return text
    return schema if isinstance(schema, dict) else text


def schema_name(schema: dict[str, Any] | str | None) -> str | None:
    """A type in a few words: its $id, else its title, else "typed (no $id or title)"; None: untyped."""
    if schema is None:
        return None
    if isinstance(schema, dict):
        for key in ("$id", "title"):
            value = schema.get(key)
            if isinstance(value, str) and value.strip():
                return value
        return "typed (no $id or title)"
    return "a type that is no JSON Schema object (written by hand)"
