"""Not an allowed module: hostile_app.jobs imports from it, which must not make it callable."""

from __future__ import annotations

from pathlib import Path

import batchq


def evil_touch(path: str) -> None:
    Path(path).write_text("evil")


class Evil:
    @staticmethod
    def run(path: str) -> None:
        Path(path).write_text("evil static")

    def touch(self, path: str) -> None:
        Path(path).write_text("evil method")


@batchq.task(name="evil_registered")
def evil_registered(path: str) -> None:
    """Registered in a module no worker lists: importing hostile_app.jobs registers it anyway."""
    Path(path).write_text("evil registered")
