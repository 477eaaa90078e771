"""Importing this writes $HOSTILE_IMPORT_MARKER: a row must never import it just to run this."""

from __future__ import annotations

import os
from pathlib import Path

if os.environ.get("HOSTILE_IMPORT_MARKER"):
    Path(os.environ["HOSTILE_IMPORT_MARKER"]).write_text("imported")


def anything(payload: object = None) -> None:
    return None
