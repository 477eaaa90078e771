"""Importing this hangs once when $SLOW_IMPORT_MARKER names a file that does not exist yet.

A worker resolves a task (imports its module) after its claim has committed and
before it calls the task: this pins a SIGKILL to exactly that point.
"""

import os
import time
from pathlib import Path

from jobs import record  # noqa: F401 - the task run as slow_import_jobs:record

_marker = os.environ.get("SLOW_IMPORT_MARKER")
if _marker and not Path(_marker).exists():
    Path(_marker).write_text(str(os.getpid()))
    time.sleep(60)
