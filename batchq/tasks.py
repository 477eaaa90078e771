"""Turning a job's task string into a callable, and refusing what is not allowed.

A row in the table is data that anyone with write access could have written,
so resolution is limited to names registered with ``@task`` and to modules
under the prefixes in ``BATCHQ_TASK_MODULES``. Anything else is refused
without importing a thing.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from .errors import TaskError, TaskNotAllowed

TASK_MODULES_ENV = "BATCHQ_TASK_MODULES"
_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_NAME = re.compile(r"^[A-Za-z_][\w.-]{0,254}$")
F = TypeVar("F", bound=Callable[..., Any])

# name -> callable, for names given with @task(name=...), and "module:qualname" paths.
_registry: dict[str, Callable[..., Any]] = {}


def task(func: F | None = None, *, name: str | None = None) -> Any:
    """Register a function as a task: ``@task`` or ``@task(name="send_mail")``.

    A registered function may be run by workers even if its module is not under
    BATCHQ_TASK_MODULES, once the worker has imported the module.
    """

    def register(fn: F) -> F:
        path = task_path(fn)
        _registry[path] = fn
        if name is not None:
            check_task_name(name)
            _registry[name] = fn
        fn.batchq_task_name = name or path  # type: ignore[attr-defined]
        return fn

    return register(func) if func is not None else register


def task_path(fn: Callable[..., Any]) -> str:
    """'module:qualname' of a module-level function or method, or a TaskError."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not module or not qualname or "<" in qualname or module == "__main__":
        raise TaskError(
            f"{fn!r} cannot be stored as a task: only functions and methods defined at "
            "module level of an importable module can (not lambdas, nested functions or __main__)"
        )
    return f"{module}:{qualname}"


def check_task_name(name: str) -> str:
    if not isinstance(name, str) or not (_PATH.match(name) or _NAME.match(name)) or len(name) > 255:
        raise TaskError(
            f"bad task name {name!r}: use 'package.module:function', 'package.module:Class.method' "
            "or a name registered with @batchq.task"
        )
    return name


def modules_from_env() -> tuple[str, ...]:
    return split_modules(os.environ.get(TASK_MODULES_ENV, ""))


def split_modules(value: str | Iterable[str]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    return tuple(item.strip() for item in items if item.strip())


class Resolver:
    """Resolves task names against the registry and the allowed module prefixes."""

    def __init__(self, allowed_modules: Iterable[str] = ()) -> None:
        self.allowed_modules = tuple(allowed_modules)
        self._imported_allowed = False
        self._resolved: dict[str, Callable[..., Any]] = {}  # the answers cannot change

    def name_for(self, target: str | Callable[..., Any]) -> str:
        """The name to store for an enqueue target, checked to resolve here."""
        if callable(target):
            name = getattr(target, "batchq_task_name", None) or task_path(target)
        else:
            name = check_task_name(target)
        self.resolve(name)
        return name

    def resolve(self, name: str) -> Callable[..., Any]:
        func = self._resolved.get(name)
        if func is None:
            func = self._resolved[name] = self._resolve(name)
        return func

    def _resolve(self, name: str) -> Callable[..., Any]:
        check_task_name(name)
        if name in _registry:
            return _registry[name]
        if ":" not in name:
            self._import_allowed_modules()
            if name in _registry:
                return _registry[name]
            raise TaskError(
                f"unknown task {name!r}: register it with @batchq.task(name={name!r}) in a "
                f"module listed in {TASK_MODULES_ENV}"
            )
        module_name, attr_path = name.split(":", 1)
        if not self.module_allowed(module_name):
            raise TaskNotAllowed(
                f"task {name!r} is not allowed: add {module_name!r} (or a parent package) to "
                f"{TASK_MODULES_ENV} or --task-modules, or register it with @batchq.task"
            )
        return _load(module_name, attr_path, name)

    def module_allowed(self, module_name: str) -> bool:
        return any(
            module_name == prefix or module_name.startswith(prefix + ".") for prefix in self.allowed_modules
        )

    def _import_allowed_modules(self) -> None:
        """Import the allowed modules once, so their @task(name=...) registrations exist."""
        if self._imported_allowed:
            return
        self._imported_allowed = True
        for module_name in self.allowed_modules:
            try:
                importlib.import_module(module_name)
            except ImportError:
                pass  # a prefix need not be importable by itself


def load_trusted(path: str) -> Callable[..., Any]:
    """Resolve an operator-given path (--handler, --hook): no module restriction."""
    if not _PATH.match(path):
        raise TaskError(f"bad callable path {path!r}: use 'package.module:function'")
    module_name, attr_path = path.split(":", 1)
    return _load(module_name, attr_path, path)


def _load(module_name: str, attr_path: str, name: str) -> Callable[..., Any]:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TaskError(f"task {name!r}: cannot import module {module_name!r}: {exc}") from None
    obj: Any = module
    parts = attr_path.split(".")
    for index, part in enumerate(parts):
        try:
            attribute = inspect.getattr_static(obj, part)
        except AttributeError:
            raise TaskError(f"task {name!r}: {module_name!r} has no attribute {attr_path!r}") from None
        is_last = index == len(parts) - 1
        if inspect.isclass(obj) and is_last and inspect.isfunction(attribute):
            obj = getattr(_instantiate(obj, name), part)  # a plain method: needs an instance
        else:
            obj = getattr(obj, part)
    if inspect.isclass(obj) or not callable(obj):
        raise TaskError(f"task {name!r} is not a function or method")
    return obj  # type: ignore[no-any-return]


def _instantiate(cls: type, name: str) -> Any:
    try:
        return cls()
    except TypeError as exc:
        raise TaskError(
            f"task {name!r}: {cls.__name__}() cannot be created with no arguments ({exc}); "
            "make the method a staticmethod or classmethod"
        ) from None
