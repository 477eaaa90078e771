"""Turning a job's task string into a callable, and refusing what is not allowed.

A row in the table is data that anyone with write access could have written, so a task
string resolves only to what an allowed module defines: a function, a method of a class,
or a method of a module-level object, each *defined* in a module that BATCHQ_TASK_MODULES
lists (never something the module merely imported, never a module, never a name starting
with '_'), or a name registered with ``@task`` in such a module. A row naming any other
module is refused without importing anything.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from ..core.config import Duration, parse_duration, parse_timeout
from ..errors import ConfigError, PayloadError, TaskError, TaskNotAllowed
from .control import DEFAULT_MAX_SNOOZES, check_exceptions, check_max_snoozes

TASK_MODULES_ENV = "BATCHQ_TASK_MODULES"
_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_NAME = re.compile(r"^[A-Za-z_][\w.-]{0,254}$")
# An entry of BATCHQ_TASK_MODULES: a module's full name, or 'package.*' for all its submodules.
_MODULE_ENTRY = re.compile(r"^(?!.*(^|\.)__)[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(\.\*)?$")
F = TypeVar("F", bound=Callable[..., Any])
Upgrade = Callable[[Any], Any]  # a version-n payload in, the version-(n+1) payload out
VERSION_RANGE = (1, 65535)  # the task_version column (SMALLINT UNSIGNED on MySQL)
_LOWEST_VERSION, _HIGHEST_VERSION = VERSION_RANGE
DEFAULT_KEEP_RESULT_SECONDS = 86400.0  # keep_result=True: a job's result is kept for a day

# name -> function, for names given with @task(name=...).
_registry: dict[str, Callable[..., Any]] = {}


def task(
    func: F | None = None,
    *,
    name: str | None = None,
    max_errors: int | None = None,
    backoff: Duration | None = None,
    timeout: Duration | None = None,
    version: int = 1,
    upgrade: Mapping[int, Upgrade] | None = None,
    keep_result: bool | Duration | None = None,
    expires: Duration | None = None,
    transactional: bool = False,
    retry_on: type[BaseException] | tuple[type[BaseException], ...] | None = None,
    discard_on: type[BaseException] | tuple[type[BaseException], ...] | None = None,
    max_snoozes: int = DEFAULT_MAX_SNOOZES,
) -> Any:
    """Register a function as a task: ``@task``, ``@task(name="send_mail")``, and its retry
    policy: ``max_errors`` for jobs enqueued without one, ``backoff`` (the first retry's delay,
    doubling up to an hour) for jobs enqueued without one, instead of `batchq run --backoff`,
    ``timeout`` (how long one call may run) for jobs enqueued without one, instead of `batchq
    run --timeout`.

    ``keep_result``: keep the outcome of this task's jobs for ``Queue.result`` (True: for a day;
    or a duration), for jobs enqueued without ``enqueue(keep_result=...)``; read at enqueue.

    ``expires`` (a duration): a job of this task that has not started that long after its
    enqueue is failed as expired, never run; for jobs enqueued without ``enqueue(expires=...)``.

    ``version`` (default 1) is stored with each job; ``upgrade`` maps every older version n to
    a function turning a version-n payload into a version-(n+1) one, so that a worker brings a
    job enqueued before a deploy up to date before the call (v1 -> v2 -> v3).

    ``transactional=True``: the task may ask for the transaction that finishes its job
    (``batchq.job_transaction()``), so that its own writes and the job's end commit together
    or not at all; that job's finish then has a commit of its own (docs/guides/finish-in-transaction.md).
    ``retry_on``/``discard_on`` (an exception class or a tuple of them): what the task raises
    that matches ``discard_on`` fails its job for good; given ``retry_on``, so does what does not
    match it. ``max_snoozes``: how often a job may ``raise batchq.Snooze`` before it fails for
    good (batchq.jobs.control).

    A registered name is resolved by workers only when the function's module is one they
    import (listed in BATCHQ_TASK_MODULES, or a submodule of a listed 'package.*').
    """
    if max_errors is not None and (
        isinstance(max_errors, bool) or not isinstance(max_errors, int) or not 1 <= max_errors <= 65535
    ):
        raise ConfigError(f"bad max_errors {max_errors!r} for a task: use a whole number from 1 to 65535")
    backoff_seconds = None if backoff is None else parse_duration(backoff, "backoff")
    timeout_seconds = parse_timeout(timeout, "timeout")
    steps = _check_upgrades(version, upgrade)
    keep_seconds = keep_result_seconds(keep_result)
    expires_seconds = task_expiry_seconds(expires)
    if not isinstance(transactional, bool):
        raise ConfigError(f"bad transactional {transactional!r} for a task: use True or False")
    retry_kinds = check_exceptions(retry_on, "retry_on")
    discard_kinds = check_exceptions(discard_on, "discard_on") or ()
    snoozes = check_max_snoozes(max_snoozes)

    def register(fn: F) -> F:
        path = task_path(fn)
        if name is not None:
            _register(check_task_name(name), fn, path)
        fn.batchq_task_name = name or path  # type: ignore[attr-defined]
        fn.batchq_max_errors = max_errors  # type: ignore[attr-defined]
        fn.batchq_backoff = backoff_seconds  # type: ignore[attr-defined]
        fn.batchq_timeout = timeout_seconds  # type: ignore[attr-defined]
        fn.batchq_version = version  # type: ignore[attr-defined]
        fn.batchq_upgrade = steps  # type: ignore[attr-defined]
        fn.batchq_keep_result = keep_seconds  # type: ignore[attr-defined]
        fn.batchq_expires = expires_seconds  # type: ignore[attr-defined]
        fn.batchq_transactional = transactional  # type: ignore[attr-defined]
        fn.batchq_retry_on = retry_kinds  # type: ignore[attr-defined]
        fn.batchq_discard_on = discard_kinds  # type: ignore[attr-defined]
        fn.batchq_max_snoozes = snoozes  # type: ignore[attr-defined]
        return fn

    return register(func) if func is not None else register


def _check_upgrades(version: int, upgrade: Mapping[int, Upgrade] | None) -> dict[int, Upgrade]:
    """The upgrade steps of a task of ``version``: one for each older version, each a function."""
    low, high = VERSION_RANGE
    if isinstance(version, bool) or not isinstance(version, int) or not low <= version <= high:
        raise ConfigError(f"bad version {version!r} for a task: use a whole number from {low} to {high}")
    if upgrade is None:
        upgrade = {}
    if not isinstance(upgrade, Mapping):
        raise ConfigError(
            f"bad upgrade {upgrade!r} for a task: use a dict {{old version: function}}, such as "
            "upgrade={1: from_v1} where from_v1 turns a version-1 payload into a version-2 one"
        )
    for old, step in upgrade.items():
        if isinstance(old, bool) or not isinstance(old, int) or not low <= old < version:
            raise ConfigError(
                f"bad upgrade step {old!r} for a task of version {version}: steps are keyed by the "
                f"version they upgrade from, a whole number from {low} to {version - 1}"
                + (" (a version-1 task has none: raise its version first)" if version == 1 else "")
            )
        if not callable(step) or inspect.isclass(step) or not_plain(step):
            raise ConfigError(
                f"bad upgrade step {old}: {step!r} is not a plain function; give one that takes a "
                f"version-{old} payload and returns the version-{old + 1} payload"
            )
    missing = [old for old in range(low, version) if old not in upgrade]
    if missing:
        first = missing[0]
        raise ConfigError(
            f"a task of version {version} has no upgrade from version {first} to {first + 1}: add "
            f"upgrade={{{first}: ...}}, a function turning a version-{first} payload into a "
            f"version-{first + 1} one, so that jobs enqueued with version {first} can still run"
        )
    return {old: upgrade[old] for old in range(low, version)}


def not_plain(func: Any) -> bool:
    """async def or a generator: calling it would not run its body."""
    kinds = (inspect.iscoroutinefunction, inspect.isasyncgenfunction, inspect.isgeneratorfunction)
    return any(kind(func) for kind in kinds)


def _register(name: str, fn: Callable[..., Any], path: str) -> None:
    """Bind a name once. The same module:qualname again (a module reloaded) replaces it."""
    current = _registry.get(name)
    if current is not None and current is not fn and task_path(current) != path:
        raise TaskError(
            f"task name {name!r} is already registered for {task_path(current)}; "
            f"{path} needs a name of its own"
        )
    _registry[name] = fn


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
    if not isinstance(name, str) or not (_PATH.fullmatch(name) or _NAME.fullmatch(name)) or len(name) > 255:
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


def call_task(func: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """Call a task; what an ``async def`` task returns is run to completion with asyncio.run."""
    result = func(*args)
    if result is not None and inspect.isawaitable(result):  # most tasks return None: no ABC check
        import asyncio  # only when a task needs it: `batchq run` starts faster without

        result = asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


class Resolver:
    """Resolves task names against the registry and the allowed modules."""

    def __init__(self, allowed_modules: Iterable[str] = ()) -> None:
        self.allowed_modules = tuple(_check_module_entry(entry) for entry in allowed_modules)
        self._modules = frozenset(entry for entry in self.allowed_modules if not entry.endswith(".*"))
        self._packages = tuple(entry[:-2] for entry in self.allowed_modules if entry.endswith(".*"))
        self._imported_allowed = False
        self._import_failures: list[str] = []
        self._resolved: dict[str, Callable[..., Any]] = {}  # the answers cannot change
        self._handed: dict[str, Resolver] = {}  # module -> resolver allowing it too (task_for)

    # -- enqueue side ---------------------------------------------------------------------

    def name_for(self, target: str | Callable[..., Any]) -> str:
        """The name to store for an enqueue target, checked to resolve here to that target."""
        return self.task_for(target)[0]

    def task_for(self, target: str | Callable[..., Any]) -> tuple[str, Callable[..., Any]]:
        """(the name to store, the callable it names) for an enqueue target.

        A task string is data (it may come from anywhere): it resolves only under the allow-list,
        as on a worker. A callable is what this process's own code handed over: its module
        needs no listing here, only on the workers, which still refuse what they do not
        allow. It must be reachable by the name stored (checked by resolving that name with its
        module allowed), so that a worker allowing that module calls this very callable.
        """
        if isinstance(target, str) or not callable(target):
            name = check_task_name(target)  # type: ignore[arg-type]
            module_name = name.split(":", 1)[0]
            if ":" in name and not self.module_allowed(module_name):
                raise TaskNotAllowed(
                    f"task {name!r} is not allowed: {self._not_listed(module_name)}. enqueue checks a "
                    f"task string as a worker does: list the module in this process too, or pass "
                    "the function itself (enqueue(send_mail, ...)), which needs no list here"
                )
            return name, self.resolve(name)
        home = self._handed_in(target)
        if inspect.ismethod(target):
            name = home._bound_method_path(target)
        else:
            name = getattr(target, "batchq_task_name", None) or task_path(target)
        func = home.resolve(name)
        if not _same_callable(func, target):
            raise TaskError(
                f"{target!r} would be stored as {name!r}, which a worker resolves to something "
                "else: enqueue the module-level name itself"
            )
        return name, func

    def _handed_in(self, target: Callable[..., Any]) -> Resolver:
        """This resolver when it allows the module that defines ``target``; else one that
        allows that module too, kept apart (self.resolve never answers from it: an in-process
        worker resolves rows only under the allow-list)."""
        func = getattr(target, "__func__", target)
        module = getattr(func, "__module__", None)
        if not isinstance(module, str) or self.module_allowed(module) or not _MODULE_ENTRY.fullmatch(module):
            return self
        home = self._handed.get(module)
        if home is None:
            home = self._handed[module] = Resolver((*self.allowed_modules, module))
        return home

    def _bound_method_path(self, method: Any) -> str:
        """'module:obj.method' for a method of a module-level object, found by identity."""
        owner, func = method.__self__, method.__func__
        if inspect.isclass(owner):  # a classmethod: name it through the class it is bound to
            return f"{task_path(owner)}.{func.__name__}"
        found = next(iter(self._module_level_names(owner)), None)
        if found is not None:
            return f"{found[0]}:{found[1]}.{func.__name__}"
        raise TaskError(
            f"{method!r} is a method of an object that no module-level name in an allowed module "
            "refers to, so a worker could not find that object: bind it to a name at module level "
            "(as in `mailer = Mailer(...)`) and enqueue that name's method, or enqueue the class's "
            "function (Mailer.send) to run it on an instance made with no arguments"
        )

    def _module_level_names(self, obj: Any) -> Iterable[tuple[str, str]]:
        """(module, name) of every public module-level name bound to obj in an allowed module."""
        for module_name, module in list(sys.modules.items()):
            if module is None or not self.module_allowed(module_name):
                continue
            for attribute, value in list(vars(module).items()):
                if value is obj and not attribute.startswith("_"):
                    yield module_name, attribute

    # -- both sides -------------------------------------------------------------------------

    def resolve(self, name: str) -> Callable[..., Any]:
        func = self._resolved.get(name)
        if func is None:
            func = self._resolved[name] = self._resolve(name)
        return func

    def module_allowed(self, module_name: str) -> bool:
        """Listed exactly, or a public submodule of a listed 'package.*' (or that package)."""
        if module_name in self._modules:
            return True
        for package in self._packages:
            if module_name == package:
                return True
            if module_name.startswith(package + "."):
                below = module_name[len(package) + 1 :].split(".")
                if not any(part.startswith("_") for part in below):
                    return True
        return False

    def _resolve(self, name: str) -> Callable[..., Any]:
        check_task_name(name)
        if ":" not in name:
            return self._registered(name)
        module_name, attr_path = name.split(":", 1)
        if not self.module_allowed(module_name):
            raise TaskNotAllowed(f"task {name!r} is not allowed: {self._not_listed(module_name)}")
        parts = attr_path.split(".")
        for part in parts:
            if part.startswith("_"):
                raise TaskNotAllowed(
                    f"task {name!r} is not allowed: {part!r} starts with '_' "
                    "(private names and dunders are never resolved)"
                )
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise TaskError(f"task {name!r}: cannot import module {module_name!r}: {exc}") from None
        return _Walk(self, name).from_module(module, parts)

    def _not_listed(self, module_name: str) -> str:
        text = f"module {module_name!r} is not in {TASK_MODULES_ENV} (or --task-modules)"
        parents = [entry for entry in self._modules if module_name.startswith(entry + ".")]
        if parents:  # an entry written for the old prefix rule
            text += (
                f". Entries are module names, matched exactly: {parents[0]!r} allows that module "
                f"only; '{parents[0]}.*' allows every submodule of {parents[0]}"
            )
        return text

    def _registered(self, name: str) -> Callable[..., Any]:
        func = _registry.get(name)
        if func is None:
            self._import_allowed_modules()
            func = _registry.get(name)
        if func is None:
            failed = f" (these failed to import: {', '.join(self._import_failures)})"
            raise TaskError(
                f"unknown task {name!r}: register it with @batchq.task(name={name!r}) in a "
                f"module listed in {TASK_MODULES_ENV}" + (failed if self._import_failures else "")
            )
        module_name = getattr(func, "__module__", None)
        if not isinstance(module_name, str) or not self.module_allowed(module_name):
            raise TaskNotAllowed(
                f"task {name!r} is not allowed: it is registered in module {module_name!r}, which "
                f"{TASK_MODULES_ENV} does not list, so workers would never import it: add {module_name!r}"
            )
        return _check_kind(func, name, name)

    def import_allowed_modules(self) -> list[str]:
        """Import every allowed module, as a worker does before it resolves a registered name
        (`batchq consume` finds its @batchq.subscriber handlers so); returns the failures."""
        self._import_allowed_modules()
        return list(self._import_failures)

    def _import_allowed_modules(self) -> None:
        """Import the allowed modules once (and every public submodule of a 'package.*'),
        so that their @task(name=...) registrations exist."""
        if self._imported_allowed:
            return
        self._imported_allowed = True
        for entry in self.allowed_modules:  # in the operator's order
            if entry.endswith(".*"):
                self._import_package(entry[:-2])
            else:
                self._try_import(entry)

    def _import_package(self, package_name: str) -> None:
        package = self._try_import(package_name)
        for info in pkgutil.iter_modules(getattr(package, "__path__", None) or [], package_name + "."):
            if self.module_allowed(info.name):  # never _private modules, nor __main__
                submodule = self._try_import(info.name)
                if info.ispkg and submodule is not None:
                    self._import_package(info.name)

    def _try_import(self, module_name: str) -> types.ModuleType | None:
        try:
            return importlib.import_module(module_name)
        except Exception as exc:  # one broken module must not hide the others' tasks
            self._import_failures.append(f"{module_name}: {type(exc).__name__}: {exc}")
            return None


class _Walk:
    """One step per part of 'Class.method' or 'obj.method', each checked, getattr_static only.

    Allowed shapes: function; Class[.Nested].method (static, class, or plain method on an
    instance made with no arguments); obj.method (obj a module-level object). Every function
    and class on the way must be defined in an allowed module.
    """

    def __init__(self, resolver: Resolver, name: str) -> None:
        self.resolver = resolver
        self.name = name

    def from_module(self, module: types.ModuleType, parts: list[str]) -> Callable[..., Any]:
        first, rest = parts[0], parts[1:]
        value = self._attribute(module, first)
        if inspect.ismodule(value):
            raise TaskNotAllowed(
                f"task {self.name!r} is not allowed: {first!r} is a module; a task names its "
                "module before the ':' (and that module must be allowed)"
            )
        if inspect.isclass(value):
            return self._from_class(value, first, rest)
        if inspect.isroutine(value):
            self._check_defined_here(value, first)
            if rest:
                raise TaskError(f"task {self.name!r}: {first!r} is a function; nothing after it is a task")
            return _check_kind(value, first, self.name)
        if len(rest) != 1:
            raise TaskError(
                f"task {self.name!r} is not a function or method defined in an allowed module: "
                f"{first!r} is an object of type {type(value).__name__} (a module-level object's task "
                "is one of its methods: 'obj.method')"
            )
        return self._method(value, type(value), rest[0], bind_to=value)

    def _from_class(self, cls: type, label: str, rest: list[str]) -> Callable[..., Any]:
        self._check_defined_here(cls, label)
        if not rest:
            raise TaskError(
                f"task {self.name!r} is not a function or method: {label!r} is a class; name one "
                "of its methods"
            )
        inner = inspect.getattr_static(cls, rest[0], None)
        if inspect.isclass(inner):
            return self._from_class(inner, rest[0], rest[1:])
        if len(rest) != 1:
            raise TaskError(f"task {self.name!r}: {rest[0]!r} of {label!r} is not a class")
        return self._method(cls, cls, rest[0], bind_to=None)

    def _method(self, owner: Any, cls: type, part: str, bind_to: Any) -> Callable[..., Any]:
        """A method of cls, looked up without running any code, bound as the call needs."""
        member = self._attribute(owner, part)
        if bind_to is not None and member is not inspect.getattr_static(cls, part, None):
            raise TaskError(f"task {self.name!r}: {part!r} is an attribute of the object, not a method")
        if isinstance(member, (staticmethod, classmethod)):
            func = member.__func__
        elif inspect.isfunction(member):
            func = member
        else:
            raise TaskError(
                f"task {self.name!r} is not a function or method defined in an allowed module: "
                f"{part!r} is an object of type {type(member).__name__}"
            )
        self._check_defined_here(func, part)
        _check_kind(func, part, self.name)
        if isinstance(member, staticmethod):
            return func  # type: ignore[no-any-return]
        if isinstance(member, classmethod):
            return types.MethodType(func, cls)
        return types.MethodType(func, bind_to if bind_to is not None else _instantiate(cls, self.name))

    def _attribute(self, owner: Any, part: str) -> Any:
        try:
            return inspect.getattr_static(owner, part)
        except AttributeError:
            module_name, attr_path = self.name.split(":", 1)
            raise TaskError(f"task {self.name!r}: {module_name!r} has no attribute {attr_path!r}") from None

    def _check_defined_here(self, obj: Any, label: str) -> None:
        """A name imported into an allowed module is not callable through it."""
        # A class's own __dict__ entry: a metaclass cannot answer for it.
        module_name = (
            vars(obj).get("__module__") if inspect.isclass(obj) else getattr(obj, "__module__", None)
        )
        if not isinstance(module_name, str) or not self.resolver.module_allowed(module_name):
            raise TaskNotAllowed(
                f"task {self.name!r} is not allowed: {label!r} is defined in module {module_name!r}, "
                "not in an allowed module (a name imported into an allowed module is not a task)"
            )


def _check_kind(func: Callable[..., Any], label: str, name: str) -> Callable[..., Any]:
    """Refuse what would be 'called' without running: a generator's body waits for iteration."""
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        raise TaskError(
            f"task {name!r}: {label!r} is a generator function, whose body would never run when "
            "called: make it a plain function (or async def without yield)"
        )
    if not callable(func):
        raise TaskError(f"task {name!r} is not a function or method")
    return func


def _same_callable(resolved: Any, target: Any) -> bool:
    if resolved is target:
        return True
    if not inspect.ismethod(resolved):
        return False
    if inspect.ismethod(target):
        return resolved.__func__ is target.__func__ and resolved.__self__ is target.__self__
    return resolved.__func__ is target  # Class.method: a plain method, on a fresh instance


def _check_module_entry(entry: str) -> str:
    if not isinstance(entry, str) or not _MODULE_ENTRY.fullmatch(entry):
        raise ConfigError(
            f"bad {TASK_MODULES_ENV} entry {entry!r}: use module names such as 'myapp.jobs' "
            "(exactly that module), or 'myapp.*' (every submodule of the package myapp)"
        )
    return entry


def load_trusted(path: str) -> Callable[..., Any]:
    """Resolve an operator-given path (--hook): no module restriction. (`run --handler` is
    called with payloads, so it is resolved under the allow-list, as tasks are.)"""
    if not _PATH.fullmatch(path):
        raise TaskError(f"bad callable path {path!r}: use 'package.module:function'")
    module_name, attr_path = path.split(":", 1)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise TaskError(f"task {path!r}: cannot import module {module_name!r}: {exc}") from None
    parts = attr_path.split(".")
    for index, part in enumerate(parts):
        try:
            attribute = inspect.getattr_static(obj, part)
        except AttributeError:
            raise TaskError(f"task {path!r}: {module_name!r} has no attribute {attr_path!r}") from None
        is_last = index == len(parts) - 1
        if inspect.isclass(obj) and is_last and inspect.isfunction(attribute):
            obj = getattr(_instantiate(obj, path), part)  # a plain method: needs an instance
        else:
            obj = getattr(obj, part)
    if inspect.isclass(obj) or not callable(obj):
        raise TaskError(f"task {path!r} is not a function or method")
    return obj  # type: ignore[no-any-return]


def _instantiate(cls: type, name: str) -> Any:
    try:
        return cls()
    except TypeError as exc:
        raise TaskError(
            f"task {name!r}: {cls.__name__}() cannot be created with no arguments ({exc}); "
            "make the method a staticmethod or classmethod"
        ) from None


def task_policy(func: Callable[..., Any] | None) -> tuple[int | None, float | None]:
    """(max_errors, backoff seconds) a task declared with @task, None for each it did not."""
    return getattr(func, "batchq_max_errors", None), getattr(func, "batchq_backoff", None)


def task_keep_result(func: Callable[..., Any] | None) -> float | None:
    """The seconds a task declared with @task(keep_result=...) keeps its results, None if none."""
    return getattr(func, "batchq_keep_result", None)


def task_expires(func: Callable[..., Any] | None) -> float | None:
    """The seconds after enqueue a task declared with @task(expires=...) lets its jobs start."""
    return getattr(func, "batchq_expires", None)


def task_expiry_seconds(value: Any) -> float | None:
    """@task(expires=...) as kept: a duration of more than 0 s (an instant would be the same for
    every job of the task: pass that to enqueue)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        raise ConfigError(
            "bad expires for a task: use a duration such as '10m'; give an instant to enqueue(expires=...)"
        )
    seconds = parse_duration(value, "expires")
    if seconds <= 0:
        raise ConfigError(f"bad expires {value!r} for a task: allow its jobs more than 0 s to start")
    return seconds


def keep_result_seconds(value: Any) -> float | None:
    """A keep_result as stored: None or False (keep nothing), True (DEFAULT_KEEP_RESULT_SECONDS)
    or a duration of more than 0 seconds; anything else raises ConfigError."""
    if value is None or value is False:
        return None
    if value is True:
        return DEFAULT_KEEP_RESULT_SECONDS
    seconds = parse_duration(value, "keep_result")
    if seconds <= 0:
        raise ConfigError(f"bad keep_result {value!r}: keep a result for more than 0 s, or pass False")
    return seconds


def task_transactional(func: Callable[..., Any] | None) -> bool:
    """Did the task declare @task(transactional=True): may it ask for its job's transaction?"""
    return getattr(func, "batchq_transactional", False) is True


def task_timeout(func: Callable[..., Any] | None) -> float | None:
    """The seconds a task declared with @task(timeout=...) may run, None if it did not."""
    return getattr(func, "batchq_timeout", None)


def task_version(func: Callable[..., Any] | None) -> int:
    """The version a task declared with @task(version=...); 1 for any other callable."""
    version = getattr(func, "batchq_version", 1)
    return version if isinstance(version, int) else 1


def checked_task_version(func: Callable[..., Any] | None, name: str) -> int:
    """task_version(func), for a job about to be written: one range on every backend (the
    servers' columns refuse more; SQLite would store it, and no worker could ever run it)."""
    version = task_version(func)
    low, high = VERSION_RANGE
    if not isinstance(version, bool) and not low <= version <= high:
        raise ConfigError(
            f"task {name!r} declares version {version!r}: a task's version is a whole number from "
            f"{low} to {high}; declare it with @task(version=...)"
        )
    return version


def declares_version(func: Callable[..., Any] | None) -> bool:
    """Whether a callable was declared with @task (and so has a version, 1 by default)."""
    return hasattr(func, "batchq_version")


def stored_version(value: Any) -> int:
    """A job row's task_version: NULL (a row from before schema 013, or written by hand) is 1.
    Anything but a whole number from 1 to 65535 (a row written by hand: SQLite's column takes
    any number) raises PayloadError: the job fails with that reason, rather than wait forever
    for a worker that knows a version no task can declare."""
    if type(value) is int and _LOWEST_VERSION <= value <= _HIGHEST_VERSION:  # every job batchq wrote
        return value
    if value is None:
        return 1
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    low, high = VERSION_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise PayloadError(
            f"the job's stored task_version {value!r} is not a version (a whole number from {low} "
            f"to {high}): fix the row or delete it"
        )
    return value


class UpgradeFailed(TaskError):
    """An upgrade step raised: the job fails with its error (``__cause__``), counted."""


def upgrade_payload(func: Callable[..., Any], payload: Any, version: int) -> Any:
    """A version-``version`` payload brought up to the task's version, one step at a time."""
    steps: dict[int, Upgrade] = getattr(func, "batchq_upgrade", {})
    for old in range(version, task_version(func)):
        step = steps[old]
        try:
            payload = step(payload)
        except BaseException as exc:  # as a task's own error: the job's failure, counted
            label = getattr(step, "__qualname__", None) or repr(step)
            raise UpgradeFailed(
                f"upgrading the payload from version {old} to {old + 1} ({label}) failed"
            ) from exc
    return payload
