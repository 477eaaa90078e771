"""``after``: job dependencies for Django Tasks, whose API has no place for them.

Django's ``Task.enqueue(*args, **kwargs)`` passes every argument to the task, and ``Task.using``
takes only priority, queue_name, run_after and backend. batchq's ``enqueue(after=...)`` therefore
comes in through a block: every task enqueued on a batchq backend inside ``with after(...)`` waits
until each parent has succeeded (docs/guides/dependencies.md). The block is a context variable,
so ``aenqueue`` (run by Django in a thread, with the caller's context) sees it too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ...errors import ConfigError

_parents: ContextVar[tuple[int, ...]] = ContextVar("batchq_django_after", default=())


@contextmanager
def after(*parents: Any) -> Iterator[None]:
    """Make every task enqueued on a batchq backend in this block wait for ``parents``: the
    TaskResults their enqueue returned, or their ids. Blocks nest: the inner one adds its
    parents. An id that is not a batchq job's raises ConfigError here; an unknown or failed
    parent, at the enqueue, before anything is written."""
    ids = tuple(_job_id(parent) for parent in parents)
    if not ids:
        raise ConfigError("after() needs at least one parent: a TaskResult or its id")
    token = _parents.set(_parents.get() + ids)
    try:
        yield
    finally:
        _parents.reset(token)


def current_parents() -> list[int] | None:
    """The parents of the ``after`` blocks open here, or None outside every block."""
    return list(_parents.get()) or None


def _job_id(parent: Any) -> int:
    """A batchq job id from a TaskResult (its ``id``, a string of digits) or an id."""
    value = getattr(parent, "id", parent)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ConfigError(
        f"after(): {parent!r} is not a batchq job: pass a TaskResult of a batchq backend, or its id"
    )
