"""The package shows the architecture (docs/contributing.md, "The parts"): every import inside
batchq runs within its part or down to a part below it, never back up, and across parts it takes
only public names. Read from the source, so a new module or import is checked as it lands."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "batchq"

# Bottom first. A part may import its own modules and those of any part before it.
LAYERS = [
    ("errors",),  # the public exceptions
    ("core",),  # config, serializers, stored values, the Job, failure fingerprints
    ("backends", "stores"),  # the database: the connection and each concern's SQL, one layer
    ("policy",),  # what a queue allows: type, bound, flow limits, settings
    ("coordination",),  # locks, partitions, host slots
    ("jobs",),  # the job queue
    ("mq",),  # the message queue and pub/sub
    ("ops",),  # explain, metrics, charts, the worker registry
    ("queue",),  # Queue, the front door
    ("runtime",),  # the worker, the consumer, the runner, the sweeps
    ("dashboard",),
    ("cli",),
    ("aio", "contrib", "testing", "__init__", "__main__"),  # the faces an app or a shell meets
]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def part_of(module: str) -> str:
    """'batchq.jobs.worker' -> 'jobs'; the package itself is its '__init__'."""
    names = module.split(".")
    return names[1] if len(names) > 1 else "__init__"


def module_name(path: Path) -> str:
    names = ("batchq", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(names[:-1] if names[-1] == "__init__" else names)


def imports(path: Path, source: str | None = None) -> list[tuple[str, str]]:
    """(imported module, imported name) for each batchq import in a file, relative ones resolved."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                # `from batchq import jobs` names a part; `from batchq import Queue` the root's name
                is_module = target == "batchq" and alias.name in RANK
                found.append((f"batchq.{alias.name}" if is_module else target, alias.name))
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
    return [(target, name) for target, name in found if target.split(".")[0] == "batchq"]


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_part_has_a_layer() -> None:
    parts = {part_of(module_name(path)) for path in SOURCES}
    assert parts <= set(RANK), f"parts with no layer: {sorted(parts - set(RANK))}: add them to LAYERS"


def upward(path: Path, source: str | None = None) -> list[str]:
    """The imports of a file that run up to a later layer."""
    here = part_of(module_name(path))
    found = imports(path, source)
    above = [
        f"{t} ({part_of(t)})" for t, _ in found if RANK[part_of(t)] > RANK[here] and part_of(t) != "__init__"
    ]
    root = [
        f"batchq.{name} (the package root)" for t, name in found if t == "batchq" and RANK[here] < RANK["aio"]
    ]
    return above + root


def private(path: Path, source: str | None = None) -> list[str]:
    """The underscore names a file takes from another part."""
    here = part_of(module_name(path))
    return [f"{t}.{name}" for t, name in imports(path, source) if name.startswith("_") and part_of(t) != here]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_never_run_back_up(path: Path) -> None:
    assert not upward(path), f"{part_of(module_name(path))} sits below what it imports: {upward(path)}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_public_names_cross_parts(path: Path) -> None:
    assert not private(path), f"private names taken from another part: {private(path)}"


def test_the_checks_see_what_they_forbid() -> None:
    """Relative imports resolve as Python resolves them: a store importing the worker runs up,
    one importing the connection does not; a private name from another part is seen."""
    store = PACKAGE / "stores" / "made_up.py"
    source = (
        "from ..runtime.worker import Worker\nfrom ..backends.base import Backend\nfrom .base import Store\n"
    )
    assert upward(store, source) == ["batchq.runtime.worker (runtime)"]
    assert upward(store, "from batchq import Queue\n") == ["batchq.Queue (the package root)"]
    assert upward(PACKAGE / "cli" / "made_up.py", "from ..dashboard import urls\n") == []
    assert private(store, "from ..core.failures import _task_frame\nfrom .base import _x\n") == [
        "batchq.core.failures._task_frame"
    ]
