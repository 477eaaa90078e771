"""Which Django Tasks a job row may name, and making them batchq task names.

A job of a Django Task is stored under the task's ``module_path`` (``myapp.tasks.send_mail``), a
batchq task name registered with ``batchq.task(name=...)`` whose callable is an
``entry.DjangoTask`` wrapping that Task.

Why this is safe (batchq's rule: a row must not be able to call anything): a worker knows only
the Django Tasks found, at its start, in the modules the project itself names: each installed
app's ``tasks`` module (as Django's admin finds ``admin.py``) and the backend's OPTIONS
``TASK_MODULES``; and of those only ``Task`` objects bound there under their own name (what
``@task`` makes). A row naming anything else, a plain function of those modules, ``os:system``
or a module no one listed, is refused by batchq's resolver without importing anything. The one
module the worker's allow-list gains is ``entry``, which defines nothing else a row could call.
``get_result()`` finds a job's Task the same way: never by importing what a row names.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from typing import Any

from django.apps import apps
from django.utils.module_loading import autodiscover_modules

from ... import task as batchq_task
from . import entry
from .compat import Task

ENTRY_MODULE = entry.__name__  # what a worker's allow-list must hold for registered Django Tasks
# name -> the Task registered under it in this process
_registered: dict[str, Any] = {}


def register(task: Any) -> str:
    """Make a Django Task a batchq task name (its module_path) in this process; returns it."""
    name = str(task.module_path)
    known = _registered.get(name)
    if known is None or known.func is not task.func:
        batchq_task(name=name)(entry.DjangoTask(task))
        _registered[name] = task
    return name


def registered_task(name: str) -> Any:
    """The Django Task registered under ``name`` in this process, or None."""
    return _registered.get(name)


def discover(extra_modules: Iterable[str] = ()) -> list[str]:
    """Import each installed app's ``tasks`` module and ``extra_modules``, and register every
    Django Task bound there under its own name; returns the names registered, sorted."""
    autodiscover_modules("tasks")
    for module_name in extra_modules:
        importlib.import_module(module_name)
    names = [f"{config.name}.tasks" for config in apps.get_app_configs()]
    found = []
    for module_name in dict.fromkeys([*names, *extra_modules]):
        module = sys.modules.get(module_name)
        for attribute, value in vars(module).items() if module is not None else ():
            if isinstance(value, Task) and value.module_path == f"{module_name}.{attribute}":
                found.append(register(value))
    return sorted(found)
