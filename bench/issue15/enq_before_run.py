"""Run a bench script with batchq imported from /tmp/enq_before (main as archived), not the checkout."""

import runpy
import sys

sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, "/tmp/enq_before")
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, script.rsplit("/", 1)[0])
runpy.run_path(script, run_name="__main__")
