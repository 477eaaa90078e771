"""The test databases: their URLs, preparing them, and looking inside them with plain SQL.

BATCHQ_TEST_BACKENDS picks the backends (default: all); BATCHQ_TEST_MYSQL_URL and
BATCHQ_TEST_POSTGRESQL_URL name the servers' test databases (each pytest-xdist worker suffixes
the name with its own id).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from batchq import Queue
from batchq.backends import create_backend
from batchq.backends.schema import migrate
from batchq.core.config import parse_url
from tests.support.queries import query

ALL_BACKENDS = ("sqlite", "mysql", "postgresql")


def _own_database(url: str) -> str:
    """The configured URL, with the database named for this pytest-xdist worker (``_gw0``, ...)
    when several run at once: each worker prepares, empties and drops its own databases."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return url
    base, query_string = url.split("?", 1) if "?" in url else (url, "")
    return f"{base}_{worker}" + (f"?{query_string}" if query_string else "")


SERVER_URLS = {
    "mysql": _own_database(
        os.environ.get("BATCHQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/batchq_test")
    ),
    "postgresql": _own_database(
        os.environ.get("BATCHQ_TEST_POSTGRESQL_URL", "postgresql://postgres@127.0.0.1:5432/batchq_test")
    ),
}
TABLES = (
    "batchq_job",
    "batchq_queue",
    "test_ledger",
    "batchq_message",
    "batchq_message_archive",
    "batchq_mq_sent",
    "batchq_mq_meta",
    "batchq_mq_subscription",
    "batchq_mq_topic",
    "batchq_mq_binding",
    "batchq_lock",
    "batchq_schedule",
    "batchq_partition",
    "batchq_worker",
    "batchq_lease",
    "batchq_history",
    "batchq_dependency",
    "batchq_queue_start",
    "batchq_rate_key",
    "batchq_rate_key_start",
    "batchq_chart_minute",
)


def selected_backends() -> list[str]:
    names = os.environ.get("BATCHQ_TEST_BACKENDS", ",".join(ALL_BACKENDS))
    return [name.strip() for name in names.split(",") if name.strip()]


def create_database(url: str) -> None:
    """Create the test database on the server if it is missing."""
    parsed = parse_url(url)
    if parsed.dialect == "mysql":
        import pymysql

        conn = pymysql.connect(
            host=parsed.host,
            port=parsed.port or 3306,
            user=parsed.user or "root",
            password=parsed.password,
            autocommit=True,
        )
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{parsed.database}` CHARACTER SET utf8mb4")
        conn.close()
    elif parsed.dialect == "postgresql":
        import psycopg

        with psycopg.connect(
            host=parsed.host,
            port=parsed.port or 5432,
            user=parsed.user or "postgres",
            password=parsed.password or None,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (parsed.database,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{parsed.database}"')


def drop_database(backend_name: str, name: str) -> None:
    """Drop database ``name`` on the test server of ``backend_name``, if it exists."""
    url = parse_url(SERVER_URLS[backend_name])
    if backend_name == "mysql":
        import pymysql

        conn = pymysql.connect(host=url.host, port=url.port or 3306, user=url.user or "root", autocommit=True)
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        conn.close()
    elif backend_name == "postgresql":
        import psycopg

        with psycopg.connect(
            host=url.host, port=url.port or 5432, user=url.user, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def sibling_database(backend_name: str, suffix: str) -> str:
    """The name of a test database beside the configured one (``batchq_test`` + ``_suffix``), so
    that checkouts testing against other databases of one server never share it."""
    return f"{parse_url(SERVER_URLS[backend_name]).database}_{suffix}"


def sibling_database_url(backend_name: str, suffix: str) -> str:
    """The URL of sibling_database(), created if missing."""
    url = SERVER_URLS[backend_name].rsplit("/", 1)[0] + "/" + sibling_database(backend_name, suffix)
    create_database(url)
    return url


def fresh_database_url(backend_name: str, tmp_path: Path, suffix: str) -> str:
    """The URL of an empty sibling database (a file under tmp_path on SQLite)."""
    if backend_name == "sqlite":
        return f"sqlite:///{tmp_path / suffix}.db"
    drop_database(backend_name, sibling_database(backend_name, suffix))
    return sibling_database_url(backend_name, suffix)


_prepared: set[str] = set()
_sqlite_template: list[Path] = []  # the SQLite file prepared once per test run, to copy


def prepare_database(backend_name: str, url: str) -> None:
    """Make the batchq tables and the ledger exist, and empty them."""
    if backend_name == "sqlite" and _copy_sqlite_template(Path(parse_url(url).database)):
        return
    _prepare_in_place(backend_name, url)


def _prepare_in_place(backend_name: str, url: str) -> None:
    first_time = url not in _prepared or backend_name == "sqlite"
    if first_time and url == SERVER_URLS.get(backend_name):
        _recreate_test_database(backend_name)
    if first_time:
        create_database(url)
    backend = create_backend(url)
    try:
        if first_time:
            migrate(backend)
            _prepared.add(url)
        with backend.errors():
            cur = backend.conn.cursor()
            cur.execute(query(backend_name, "ledger_create"))
            for table in TABLES:
                cur.execute(f"DELETE FROM {table}")
            cur.close()
        partitions = backend.stores.partitions  # their index outlives the rows: a test's set_partitions
        if partitions.index_exists():
            partitions.drop_index()
    finally:
        backend.close()


def _recreate_test_database(backend_name: str) -> None:
    """Drop the configured test database once per run, so the run starts from the schema the
    checkout's migrations build: a database kept from a run of other code may have recorded a
    migration under the same number with other statements."""
    drop_database(backend_name, parse_url(SERVER_URLS[backend_name]).database)


def _copy_sqlite_template(path: Path) -> bool:
    """A new SQLite file (each test's db_url) is a copy of one prepared once per run, as
    _prepare_in_place would leave it: migrating every test's file took 25-80 ms. An existing
    file is prepared in place (False)."""
    if path.exists() or not path.parent.is_dir():
        return False
    if not _sqlite_template:
        folder = Path(tempfile.mkdtemp(prefix="batchq-template-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        template = folder / "batchq.db"
        _prepare_in_place("sqlite", f"sqlite:///{template}")
        assert not Path(f"{template}-wal").exists(), "closed with its WAL checkpointed"
        _sqlite_template.append(template)
    shutil.copyfile(_sqlite_template[0], path)
    return True


def sql(queue: Queue, statement: str, params: Any = ()) -> list[tuple[Any, ...]]:
    """Run raw SQL on the queue's database (test inspection only)."""
    backend = queue.backend
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute(statement, params)
        rows = list(cur.fetchall()) if cur.description else []
        cur.close()
    return [tuple(row) for row in rows]


def run_query(queue: Queue, name: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    """Run a named test query (tests/sql/<dialect>.sql) on the queue's database."""
    return sql(queue, query(queue.backend.dialect, name), params or {})


def run_query_on(conn: Any, dialect: str, name: str, params: dict[str, Any] | None = None) -> Any:
    """Run a named test query on a connection of one's own; returns the cursor, left open."""
    cur = conn.cursor()
    cur.execute(query(dialect, name), params or {})
    return cur


def job_rows(queue: Queue) -> list[dict[str, Any]]:
    backend = queue.backend
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute(
            "SELECT id, queue, task, status, error_count, max_errors, last_error, locked_by "
            "FROM batchq_job ORDER BY id"
        )
        rows = [dict(zip([d[0] for d in cur.description], row)) for row in cur.fetchall()]
        cur.close()
    return rows


def ledger(queue: Queue) -> list[int]:
    return sorted(row[0] for row in sql(queue, "SELECT n FROM test_ledger"))


def app_connection(db_url: str, **options: Any) -> Any:
    """The application's own connection, with a transaction open (autocommit off); ``options``
    go to the driver's connect (PyMySQL: ``cursorclass=DictCursor``, as a Flask app opens it)."""
    url = parse_url(db_url)
    if url.dialect == "sqlite":
        import sqlite3

        return sqlite3.connect(url.database, **options)  # default: implicit transactions around DML
    if url.dialect == "mysql":
        import pymysql

        return pymysql.connect(
            host=url.host,
            port=url.port or 3306,
            user=url.user or "root",
            password=url.password,
            database=url.database,
            autocommit=False,
            **options,
        )
    import psycopg

    return psycopg.connect(
        host=url.host,
        port=url.port or 5432,
        user=url.user,
        password=url.password or None,
        dbname=url.database,
        **options,
    )


def autocommit_connection(db_url: str) -> Any:
    """A connection of the test's own in autocommit: to watch and end other sessions."""
    conn = app_connection(db_url)
    if parse_url(db_url).dialect == "mysql":
        conn.autocommit(True)
    else:
        conn.autocommit = True
    return conn
