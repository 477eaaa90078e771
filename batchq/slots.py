"""At most K `batchq run` processes per host and database: one flock()ed file per slot.

The kernel drops a flock when its process dies, however it dies, so a killed
worker never leaves a slot taken.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


def slot_dir(database: str) -> Path:
    key = hashlib.sha1(database.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"batchq-{os.getuid()}" / key


@contextmanager
def host_slot(database: str, max_procs: int) -> Iterator[int | None]:
    """Yield the slot number taken, or None when all ``max_procs`` slots are busy."""
    folder = slot_dir(database)
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(max_procs):
        handle: IO[bytes] = open(folder / f"slot-{number}.lock", "ab")  # noqa: SIM115
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        try:
            yield number
        finally:
            handle.close()  # releases the lock
        return
    yield None
