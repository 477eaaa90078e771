"""Not an allowed module: hostile_app.jobs imports from it, which must not make it callable."""

from __future__ import annotations

from pathlib import Path


def evil_touch(path: str) -> None:
    Path(path).write_text("evil")


class Evil:
    @staticmethod
    def run(path: str) -> None:
        Path(path).write_text("evil static")

    def touch(self, path: str) -> None:
        Path(path).write_text("evil method")
