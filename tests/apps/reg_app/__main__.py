"""`python -m reg_app`: a worker walking reg_app.* must never import this."""

import os
from pathlib import Path

if os.environ.get("REG_MAIN_MARKER"):
    Path(os.environ["REG_MAIN_MARKER"]).write_text("imported")
