"""The SQL schema reference (docs/reference/schema/<dialect>.md) is what scripts/schema_reference.py
renders from sql/<dialect>/migrations: a migration added or changed without re-rendering the
pages fails here, and so does a page edited by hand."""

from __future__ import annotations

import difflib
import sqlite3

import pytest

from batchq.backends.sqlfiles import migrations
from scripts import schema_reference
from scripts.schema_reference import DIALECTS, PAGES, render, tables


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_schema_reference_is_rendered_from_the_migrations(dialect: str) -> None:
    page = PAGES / f"{dialect}.md"
    text = page.read_text("utf-8")
    wanted = render(dialect)
    diff = "\n".join(difflib.unified_diff(text.splitlines(), wanted.splitlines(), page.name, "rendered", n=0))
    assert wanted == text, f"run `.venv/bin/python scripts/schema_reference.py`:\n{diff}"


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_migration_is_on_its_page(dialect: str) -> None:
    text = render(dialect)
    for _version, name, _statements in migrations(dialect):
        assert f"### {name}\n" in text, name


def test_the_table_list_is_what_the_migrations_leave_on_sqlite() -> None:
    """The list is read from the SQL text; SQLite, applying the same migrations, must agree."""
    db = sqlite3.connect(":memory:")
    for _version, _name, statements in migrations("sqlite"):
        for statement in statements:
            db.execute(statement)
    made = {
        row[0]
        for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'batchq%'")
    }
    assert made == set(tables("sqlite"))


def test_the_dialects_have_the_same_tables_but_postgresqls_unlogged_one() -> None:
    assert (
        set(tables("mysql"))
        == set(tables("sqlite"))
        == set(tables("postgresql")) - {"batchq_message_unlogged"}
    )


def test_check_mode_fails_on_a_stale_page(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(schema_reference, "PAGES", tmp_path)
    assert schema_reference.main(["schema_reference.py", "--check"]) == 1  # no pages at all
    assert schema_reference.main(["schema_reference.py"]) == 0
    assert schema_reference.main(["schema_reference.py", "--check"]) == 0
    (tmp_path / "mysql.md").write_text("# edited by hand\n", "utf-8")
    assert schema_reference.main(["schema_reference.py", "--check"]) == 1
