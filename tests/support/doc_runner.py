"""Runs one page's code blocks in order, as a reader would, in the current folder:
``python doc_runner.py STEPS.json`` (tests/acceptance/test_doc_examples.py writes the steps).

A block that starts with a file name (``# shop/jobs.py``, ``# schedules.toml``) is written to
that file, a Python one then imported (the page's files come first); any other python block runs
as the script ``__main__``, one a page (a later block sees an earlier one's names);
a sh block runs in bash (-eu, pipefail); a console block runs its ``$ `` lines. The first step
that fails prints where it is on the page and exits 1. Nothing of batchq's checkout is imported
here: the blocks see only what the environment gives them.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import traceback
import types
from pathlib import Path


def write_file(path: str, code: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(code, "utf-8")
    if target.suffix == ".py":  # folders are namespace packages: myapp/ here and myapp.jobs beside
        importlib.import_module(".".join(target.with_suffix("").parts))


def shell(code: str) -> int:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", code], timeout=120).returncode


def console(code: str) -> int:
    commands = [line[2:] for line in code.splitlines() if line.startswith("$ ")]
    return shell("\n".join(commands))


def main(steps_file: str) -> int:
    script = types.ModuleType("__main__")  # as `python script.py` has it: dataclasses, pickle
    sys.modules["__main__"] = script
    sys.path.insert(0, str(Path.cwd()))
    for step in json.loads(Path(steps_file).read_text("utf-8")):
        where, kind, code = step["where"], step["kind"], step["code"]
        print(f"--- {where} ({kind})", file=sys.stderr, flush=True)
        try:
            if kind == "file":
                write_file(step["path"], code)
            elif kind == "python":
                exec(compile(code, where, "exec"), script.__dict__)
            else:
                status = (console if kind == "console" else shell)(code)
                if status != 0:
                    print(f"{where}: exit status {status}", file=sys.stderr)
                    return 1
        except BaseException:
            traceback.print_exc()
            print(f"{where}: the block failed", file=sys.stderr)
            return 1
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
