"""The command on MySQL/MariaDB: libpq's sslmode names in the URL; skip_locked=off."""

from __future__ import annotations

import ssl

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.processes import assert_one_line_error


@pytest.mark.backends("mysql")
def test_mysql_sslmode_in_the_url(queue: Queue, db_url: str) -> None:
    """libpq's sslmode names on MySQL too: disable skips TLS, require insists on it."""
    separator = "&" if "?" in db_url else "?"
    assert invoke_batchq(f"{db_url}{separator}sslmode=disable", "stats").returncode == 0
    assert_one_line_error(
        invoke_batchq(f"{db_url}{separator}sslmode=bogus", "stats"), "bad sslmode 'bogus'", status=2
    )
    missing_ca = f"{db_url}{separator}sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem"
    assert_one_line_error(
        invoke_batchq(missing_ca, "stats"), "cannot read sslrootcert '/nonexistent/ca.pem'", status=2
    )
    with queue.backend.conn.cursor() as cur:
        cur.execute("SELECT @@have_ssl")
        (have_ssl,) = cur.fetchone()
    required = invoke_batchq(f"{db_url}{separator}sslmode=require", "stats")
    if have_ssl == "YES":
        assert required.returncode == 0, required.stderr
    else:
        assert_one_line_error(required, "sslmode=")


@pytest.mark.backends("mysql")
def test_mysql_skip_locked_off_in_the_url(queue: Queue, db_url: str) -> None:
    """skip_locked=off claims as servers without SKIP LOCKED do, and stats says why."""
    separator = "&" if "?" in db_url else "?"
    assert_one_line_error(
        invoke_batchq(f"{db_url}{separator}skip_locked=never", "stats"), "bad skip_locked 'never'", status=2
    )
    stats = invoke_batchq(f"{db_url}{separator}skip_locked=off", "stats")
    assert "FOR UPDATE (no SKIP LOCKED by the URL's skip_locked=off" in stats.stdout
    assert "FOR UPDATE SKIP LOCKED" in invoke_batchq(f"{db_url}{separator}skip_locked=auto", "stats").stdout


@pytest.mark.backends("mysql")
def test_sslmode_prefer_shares_one_unverified_tls_context(db_url: str) -> None:
    """sslmode=prefer (the default): TLS when the server offers it, verifying nothing, as
    PyMySQL's own default; its context, whose CA store took ~60 ms of CPU to load, is built once
    per process, not once per connection."""
    queues = [Queue(db_url), Queue(db_url)]
    try:
        (context,) = {q.backend.conn.ctx for q in queues}  # one, shared
        assert (context.verify_mode, context.check_hostname) == (ssl.CERT_NONE, False)
        assert all(q.backend.conn._ssl_required is False for q in queues)  # prefer, not require
        assert invoke_batchq(db_url, "stats").returncode == 0
    finally:
        for q in queues:
            q.close()
