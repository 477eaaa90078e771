"""The backend's OPTIONS, read and checked once, and the batchq URL of its queue.

``TASKS = {"default": {"BACKEND": "batchq.contrib.django.BatchqBackend", "QUEUES": [...],
"OPTIONS": {...}}}``, OPTIONS all optional:

- ``DATABASE``: the Django database alias whose database holds the queue (default "default").
  Jobs are enqueued on that alias's connection, so an enqueue inside ``transaction.atomic()``
  commits or rolls back with it; workers reach the same database with a URL built from its
  settings (the test database's, under Django's test runner).
- ``URL``: a batchq URL of another database instead (not with DATABASE): the job is written at
  once on batchq's own connection, whatever transaction the caller is in.
- ``MAX_ERRORS``: tries before a job is FAILED (default 1, as Django's own backends: a task
  that raises is FAILED; more tries retry it with batchq's backoff, READY in between).
- ``KEEP_RESULT``: how long a job's outcome stays readable by ``get_result()`` after it ended:
  True (a day, the default) or a duration ("7d", seconds, a timedelta).
- ``TASK_MODULES``: modules a worker imports to find tasks, besides each installed app's
  ``tasks`` module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from django.core.exceptions import ImproperlyConfigured

from ...core.config import check_queue_name, parse_url
from ...errors import ConfigError
from ...jobs.tasks import keep_result_seconds

KNOWN_OPTIONS = {"DATABASE", "URL", "MAX_ERRORS", "KEEP_RESULT", "TASK_MODULES"}
DEFAULT_MAX_ERRORS = 1


@dataclass(frozen=True)
class BackendOptions:
    database: str | None  # the Django alias whose connection enqueues (None: URL given)
    url: str | None  # the explicit batchq URL (None: built from the alias's settings)
    max_errors: int
    keep_result: Any  # as enqueue(keep_result=...) takes it
    task_modules: tuple[str, ...]


def read_options(alias: str, queues: set[str], options: Mapping[str, Any]) -> BackendOptions:
    """OPTIONS checked, with every mistake named as ImproperlyConfigured."""
    where = f"TASKS[{alias!r}]"
    unknown = sorted(set(options) - KNOWN_OPTIONS)
    if unknown:
        raise ImproperlyConfigured(
            f"{where}['OPTIONS'] has unknown option(s) {', '.join(unknown)}: "
            f"batchq's backend takes {', '.join(sorted(KNOWN_OPTIONS))}"
        )
    for name in sorted(queues):
        try:
            check_queue_name(name)
        except ConfigError as exc:
            raise ImproperlyConfigured(f"{where}['QUEUES']: {exc}") from None
    url, database = options.get("URL"), options.get("DATABASE")
    if url is not None and database is not None:
        raise ImproperlyConfigured(
            f"{where}['OPTIONS'] has both URL and DATABASE: give DATABASE (a Django alias) for "
            "a queue in the app's database, or URL for a queue in another one"
        )
    if url is not None:
        try:
            parse_url(url)
        except ConfigError as exc:
            raise ImproperlyConfigured(f"{where}['OPTIONS']['URL']: {exc}") from None
    max_errors = options.get("MAX_ERRORS", DEFAULT_MAX_ERRORS)
    if isinstance(max_errors, bool) or not isinstance(max_errors, int) or not 1 <= max_errors <= 65535:
        raise ImproperlyConfigured(f"{where}['OPTIONS']['MAX_ERRORS'] must be a whole number from 1 to 65535")
    keep_result = options.get("KEEP_RESULT", True)
    try:
        keep_result_seconds(keep_result)
    except ConfigError as exc:
        raise ImproperlyConfigured(f"{where}['OPTIONS']['KEEP_RESULT']: {exc}") from None
    modules = options.get("TASK_MODULES", ())
    if isinstance(modules, str) or not all(isinstance(m, str) for m in modules):
        raise ImproperlyConfigured(f"{where}['OPTIONS']['TASK_MODULES'] must be a list of module names")
    return BackendOptions(
        database=None if url is not None else (database or "default"),
        url=url,
        max_errors=max_errors,
        keep_result=keep_result,
        task_modules=tuple(modules),
    )


def url_of_database(alias: str, settings: Mapping[str, Any]) -> str:
    """A batchq URL for a Django database's settings (``connections[alias].settings_dict``)."""
    engine, name = settings.get("ENGINE", ""), str(settings.get("NAME") or "")
    if engine.endswith("sqlite3"):
        if not name or name == ":memory:" or "mode=memory" in name:
            raise ImproperlyConfigured(
                f"database {alias!r} is an in-memory SQLite database, which a worker process "
                "cannot reach: give it a file NAME (and TEST NAME), or set the backend's OPTIONS URL"
            )
        return f"sqlite:///{name}"
    dialect = next((d for d in ("postgresql", "mysql") if d in engine), None)
    if dialect is None:
        raise ImproperlyConfigured(
            f"database {alias!r} ({engine}) is not one batchq runs on: use SQLite, PostgreSQL or "
            "MySQL/MariaDB, or set the backend's OPTIONS URL to a database that is"
        )
    user, password = settings.get("USER") or "", settings.get("PASSWORD") or ""
    auth = quote(str(user), safe="") + (":" + quote(str(password), safe="") if password else "")
    host, port = settings.get("HOST") or "localhost", settings.get("PORT")
    where = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    return f"{dialect}://{auth + '@' if auth else ''}{where}/{quote(name, safe='')}"
