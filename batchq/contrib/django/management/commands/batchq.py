"""``manage.py batchq [--backend ALIAS] COMMAND [ARGS]``: batchq's command line with the
project's settings loaded, on the queue of a BatchqBackend of settings.TASKS.

Every batchq command is there (``run``, ``gc-processing``, ``gc-error``, ``init-db``, ``stats``,
``explain``, ...) with its own options and exit statuses; this adds the backend's database URL
(``--url`` still wins), and for ``run``: its QUEUES as the queues served when no ``--queue`` is
given, and the Django Tasks a worker may run (batchq.contrib.django.entry), found before the
first job.
"""

from __future__ import annotations

import logging
import sys
from argparse import REMAINDER, ArgumentParser
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from batchq.cli import cli
from batchq.contrib.django.compat import TASKS_LOGGER, InvalidTaskBackend, task_backends
from batchq.contrib.django.registry import ENTRY_MODULE, discover
from batchq.jobs.tasks import modules_from_env, split_modules

PROG = "manage.py batchq"


class Command(BaseCommand):
    help = "batchq's commands (run, gc-processing, gc-error, init-db, ...) on a BatchqBackend's queue."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("batchq_args", nargs=REMAINDER, help="a batchq command and its arguments")

    def run_from_argv(self, argv: list[str]) -> None:
        """Every argument goes to batchq (Django's own -v and --traceback would shadow its own);
        --settings and --pythonpath were read by manage.py already."""
        try:
            status = self.batchq(argv[2:])
        except CommandError as exc:
            self.stderr.write(f"batchq: error: {exc}")
            status = 2
        finally:
            connections.close_all()
        sys.exit(status)

    def handle(self, *args: Any, batchq_args: list[str] | None = None, **options: Any) -> None:
        status = self.batchq([*args, *(batchq_args or [])])
        if status:
            raise CommandError(f"batchq exited with status {status}", returncode=status)

    def batchq(self, args: list[str]) -> int:
        alias, args = _backend_alias(args)
        backend = _backend(alias)
        command = next((a for a in args if not a.startswith("-")), None)
        try:
            url = backend.url
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        if command == "run":
            args = _run_args(args, alias, backend)
        try:
            cli.main(args=["--url", url, *args], prog_name=PROG, standalone_mode=True)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return 0


def _backend_alias(args: list[str]) -> tuple[str, list[str]]:
    if args[:1] == ["--backend"]:
        if len(args) < 2:
            raise CommandError("--backend needs an alias of settings.TASKS")
        return args[1], args[2:]
    if args[:1] and args[0].startswith("--backend="):
        return args[0].split("=", 1)[1], args[1:]
    return "default", args


def _backend(alias: str) -> Any:
    from batchq.contrib.django.backend import BatchqBackend

    try:
        backend = task_backends[alias]
    except InvalidTaskBackend as exc:
        raise CommandError(f"no task backend {alias!r}: {exc}") from None
    except ImproperlyConfigured as exc:  # the backend's OPTIONS or QUEUES
        raise CommandError(str(exc)) from None
    if not isinstance(backend, BatchqBackend):
        raise CommandError(
            f"TASKS[{alias!r}] is {type(backend).__name__}, not batchq.contrib.django.BatchqBackend: "
            "pick a batchq backend with --backend ALIAS"
        )
    return backend


def _run_args(args: list[str], alias: str, backend: Any) -> list[str]:
    """run's arguments, with the backend's queues and the worker's allow-list."""
    discover(backend.settings.task_modules)
    _quiet_tasks_logger(args)
    args = _with_task_modules(args)
    if not any(a == "--queue" or a.startswith("--queue=") for a in args):
        queues = settings.TASKS.get(alias, {}).get("QUEUES") or ["default"]
        for name in queues:
            args += ["--queue", name]
    return args


def _quiet_tasks_logger(args: list[str]) -> None:
    """Django logs each task's start and end, a failure at ERROR with its traceback: cron would
    mail every failed job. Without -v a worker is quiet, as `batchq run` is (gc-error reports
    failures), unless the project's LOGGING set that logger's level itself."""
    verbose = any(a == "--verbose" or (a.startswith("-v") and set(a[1:]) == {"v"}) for a in args)
    logger = logging.getLogger(TASKS_LOGGER)
    if not verbose and logger.level == logging.NOTSET:
        logger.setLevel(logging.CRITICAL)


def _with_task_modules(args: list[str]) -> list[str]:
    """--task-modules (or BATCHQ_TASK_MODULES) plus the entry's module: registered Django Tasks."""
    for index, arg in enumerate(args):
        if arg == "--task-modules" and index + 1 < len(args):
            return [*args[: index + 1], _plus_entry(args[index + 1]), *args[index + 2 :]]
        if arg.startswith("--task-modules="):
            return [*args[:index], "--task-modules=" + _plus_entry(arg.split("=", 1)[1]), *args[index + 1 :]]
    return [*args, "--task-modules", ",".join([*modules_from_env(), ENTRY_MODULE])]


def _plus_entry(value: str) -> str:
    return ",".join([*split_modules(value), ENTRY_MODULE])
