"""What tests/apps/hostile_app offers an attacker: the task strings a worker must refuse, and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ALLOWED = "hostile_app.jobs"  # the one module a worker allows

# (task string, payload kind, what the refusal says). Payload "cmd" is a shell command that
# creates the marker, "path" the marker's path, None no payload.
HOSTILE: list[tuple[str, str | None, str]] = [
    ("hostile_app.jobs:os.system", "cmd", "'os' is a module"),
    ("hostile_app.jobs:subprocess.getoutput", "cmd", "'subprocess' is a module"),
    ("hostile_app.jobs:system", "cmd", "'system' is defined in module 'posix'"),
    ("hostile_app.jobs:getoutput", "cmd", "'getoutput' is defined in module 'subprocess'"),
    ("hostile_app.jobs:evil_touch", "path", "'evil_touch' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:Evil.run", "path", "'Evil' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:Evil.touch", "path", "'Evil' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:Child.run", "path", "'run' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:Child.touch", "path", "'touch' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:evil_object.touch", "path", "'touch' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:helpers.helper_touch", "path", "'helpers' is a module"),
    ("hostile_app.jobs:_private_touch", "path", "'_private_touch' starts with '_'"),
    ("hostile_app.jobs:touch.__globals__.clear", None, "'__globals__' starts with '_'"),
    ("hostile_app.jobs:Mailer.__init__", None, "'__init__' starts with '_'"),
    ("hostile_app.jobs:mailer.__class__", None, "'__class__' starts with '_'"),
    ("hostile_app.jobs:CONFIG.clear", None, "not a function or method defined in an allowed module"),
    ("hostile_app.jobs:generator_touch", "path", "generator function"),
    ("hostile_app.jobs:mailer.greeting", None, "is an attribute of the object, not a method"),
    ("evil_registered", "path", "registered in module 'hostile_app.evil', which BATCHQ_TASK_MODULES"),
    ("hostile_app.side_effect:anything", None, "module 'hostile_app.side_effect' is not in"),
    ("hostile_app.jobs.side_effect:anything", None, "is not in"),
    ("hostile_app.__main__:x", None, "is not in"),
]


def hostile_payload(kind: str | None, marker: Path) -> Any:
    return {"cmd": f"touch {marker}", "path": str(marker), None: None}[kind]
