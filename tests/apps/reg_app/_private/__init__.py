"""A private subpackage: `reg_app.*` does not cover it, so a worker never imports it."""

import os
from pathlib import Path

if os.environ.get("REG_PRIVATE_MARKER"):
    Path(os.environ["REG_PRIVATE_MARKER"]).write_text("imported")
