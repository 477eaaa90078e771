"""What every request works on: the Queue, its Guard and the page refresh, kept in the app's
extensions so that the blueprints' functions reach them through current_app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from flask import Flask, current_app

from ..backends import Backend
from ..queue import Queue
from .hosts import HostPolicy
from .security import Guard

_KEY = "batchq.dashboard"


@dataclass(frozen=True)
class Dashboard:
    queue: Queue
    guard: Guard
    refresh: float
    hosts: HostPolicy

    @property
    def backend(self) -> Backend:
        """This request thread's own connection (Queue keeps one per thread), so the pages that
        read through a backend do not queue behind one another's session lock."""
        return self.queue.backend


def install(app: Flask, dashboard: Dashboard) -> None:
    app.extensions[_KEY] = dashboard


def current() -> Dashboard:
    """The Dashboard of the app serving this request."""
    return cast(Dashboard, current_app.extensions[_KEY])
