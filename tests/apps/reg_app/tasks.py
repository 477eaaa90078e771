"""Registers `reg_touch`; a worker listing `reg_app.*` imports this to find it."""

from __future__ import annotations

from pathlib import Path

import batchq


@batchq.task(name="reg_touch")
def reg_touch(path: str) -> None:
    Path(path).write_text("registered")
