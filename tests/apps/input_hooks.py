"""Hooks for tests/acceptance/test_input_hardening.py (loaded with --hook: no module restriction)."""

from __future__ import annotations

from typing import Any


def explode(jobs: list[dict[str, Any]]) -> None:
    """A --hook whose alerting service is down."""
    raise ConnectionError(f"dashboard unreachable for {len(jobs)} jobs\nsecond line of detail")
