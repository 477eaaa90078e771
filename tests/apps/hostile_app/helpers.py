"""Reached from hostile_app.jobs as a module attribute (`from hostile_app import helpers`)."""

from __future__ import annotations

from pathlib import Path


def helper_touch(path: str) -> None:
    Path(path).write_text("helper")
