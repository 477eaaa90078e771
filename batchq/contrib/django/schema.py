"""batchq's tables in the app's database, created by ``manage.py migrate``.

The contrib app's migration (migrations/0001_batchq_schema.py) runs batchq's init-db for every
BatchqBackend whose DATABASE is the alias being migrated: ``migrate`` creates the tables with
the app's own, and so does Django's test runner in each test database. batchq's schema moves
with the batchq package, not with the app's migrations, which run once: after upgrading batchq,
``manage.py batchq init-db`` (idempotent, quiet) brings it up to date, as ``batchq init-db``
does; so does it for a backend whose OPTIONS URL is another database, which migrate never
touches.
"""

from __future__ import annotations

from typing import Any

from ...queue import Queue
from .compat import task_backends


def init_db_for_alias(alias: str) -> list[str]:
    """Create or migrate batchq's tables for the BatchqBackends on Django database ``alias``;
    returns the URLs done."""
    from .backend import BatchqBackend

    done: list[str] = []
    for name in task_backends.settings:
        backend: Any = task_backends[name]
        if (
            isinstance(backend, BatchqBackend)
            and backend.settings.database == alias
            and backend.url not in done
        ):
            queue = Queue(backend.url)
            try:
                queue.init_db()
            finally:
                queue.close()
            done.append(backend.url)
    return done
