"""How MySQL/MariaDB errors are classified, without a server: what is retried, reconnected, reported."""

from __future__ import annotations

import pymysql
import pytest

from batchq.backends import create_backend
from batchq.backends.base import TransientError
from batchq.errors import BackendError, BackendUnavailable

NOT_PRIMARY = (
    "Error while appending streaming replication fragment"
    "(provider status: Not connected to Primary Component)"
)


@pytest.mark.parametrize(
    ("code", "message", "galera", "kind"),
    [
        (1213, "Deadlock found", False, TransientError),  # also Galera's certification failure
        (1047, "WSREP has not yet prepared node for application use", True, BackendUnavailable),
        # A commit under way when a Galera node lost the primary component: not committed.
        (1180, NOT_PRIMARY, True, BackendUnavailable),
        # The same code from a single server is an engine's failure at commit: reported.
        (1180, "Got error 28 during COMMIT", False, BackendError),
        (2013, "Lost connection to server during query", False, BackendUnavailable),
        # A refused login: 1045, or 1698 when the host has password users (any real server).
        (1045, "Access denied for user 'app'@'10.0.0.5' (using password: YES)", False, BackendUnavailable),
        (1698, "Access denied for user 'app'@'10.0.0.5'", False, BackendUnavailable),
    ],
)
def test_error_kinds(code: int, message: str, galera: bool, kind: type[BackendError]) -> None:
    backend = create_backend("mysql://root@127.0.0.1:1/unused")  # never connects
    backend.galera = galera  # type: ignore[attr-defined]
    translated = backend._translate(pymysql.err.OperationalError(code, message))
    assert type(translated) is kind
