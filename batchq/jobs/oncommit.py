"""Run an action once the application's transaction commits: Queue.enqueue_on_commit.

For a queue in another database than the app's, where the job cannot join the app's
transaction: the job is written (on the queue's own connection) right after the app's
transaction commits, and not at all if it rolls back. A Django connection uses Django's
``transaction.on_commit`` (outside atomic(), Django runs it at once); an SQLAlchemy Session its
transaction events, savepoints included. What this does not guarantee: docs/app-transactions.md.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from ..backends.appconn import is_django_connection
from ..errors import ConfigError

log = logging.getLogger("batchq.on_commit")

Action = Callable[[], object]
_PENDING = "batchq.on_commit"  # Session.info: {SessionTransaction: [actions]}
_COMMITTED = "batchq.committed"  # Session.info: the transactions seen committing


def after_commit(app: Any, action: Action, what: str) -> None:
    """Run ``action`` after the transaction ``app`` (a Django connection or an SQLAlchemy
    Session) is in commits; drop it if that transaction rolls back. ``what`` names the action
    in the log line of a failure (which is also raised, from where the app commits)."""
    reported = _reported(action, what)
    if is_django_connection(app):
        from django.db import transaction

        transaction.on_commit(reported, using=app.alias)
        return
    session = _session(app)
    if session is None:
        cls = type(app)
        raise ConfigError(
            f"enqueue_on_commit() got {cls.__module__}.{cls.__qualname__}: pass a Django connection or "
            "an SQLAlchemy Session, whose commit batchq can wait for (an SQLAlchemy Connection or a "
            "driver's connection tells nobody once it has committed: enqueue after your commit, or "
            "with conn= when the queue is in the same database)"
        )
    _after_session_commit(session, reported)


def _reported(action: Action, what: str) -> Action:
    """``action``, whose failure is logged before it is raised: the app's transaction has
    committed by then, and whoever catches the error may not know what was lost."""

    def run() -> None:
        try:
            action()
        except Exception as exc:
            log.error("%s was not done after the app's transaction committed: %s", what, exc)
            raise

    return run


def _session(app: Any) -> Any:
    """The Session of a Session or a scoped_session (its current one), else None."""
    if "sqlalchemy" not in sys.modules:
        return None
    from sqlalchemy.orm import Session, scoped_session

    if isinstance(app, scoped_session):
        return app()
    return app if isinstance(app, Session) else None


def _after_session_commit(session: Any, action: Action) -> None:
    """Attach ``action`` to the Session's innermost transaction (begun if there is none, as its
    next statement would). A savepoint that is released hands its actions to its parent; one
    rolled back drops them; the outermost transaction runs them once it has committed."""
    from sqlalchemy import event

    if _PENDING not in session.info:
        session.info[_PENDING], session.info[_COMMITTED] = {}, set()
        event.listen(session, "after_commit", _committing)
        event.listen(session, "after_transaction_end", _ended)
    if not session.in_transaction():
        session.begin()
    current = session.get_nested_transaction() or session.get_transaction()
    session.info[_PENDING].setdefault(current, []).append(action)


def _committing(session: Any) -> None:
    """after_commit: the innermost transaction (a savepoint's release, or the outermost's
    commit) has committed; it ends next."""
    session.info[_COMMITTED].add(session.get_nested_transaction() or session.get_transaction())


def _ended(session: Any, transaction: Any) -> None:
    """after_transaction_end: run, hand up or drop the actions of the transaction that ended."""
    actions = session.info[_PENDING].pop(transaction, [])
    committed = transaction in session.info[_COMMITTED]
    session.info[_COMMITTED].discard(transaction)
    if not (actions and committed):
        return  # rolled back (or closed without commit): nothing of it happens
    if transaction.parent is not None:  # a savepoint: its parent may still roll back
        session.info[_PENDING].setdefault(transaction.parent, []).extend(actions)
        return
    _run_all(actions)


def _run_all(actions: list[Action]) -> None:
    """Run every action, even after one fails (each failure is logged); raise the first."""
    first: Exception | None = None
    for action in actions:
        try:
            action()
        except Exception as exc:
            first = first or exc
    if first is not None:
        raise first
