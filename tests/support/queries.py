"""The SQL the tests run, by name: one ``tests/sql/<dialect>.sql`` per dialect, in the format of
the product's own ``sql/<dialect>/*.sql`` (``-- name: X``, one line of description, the statement)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from batchq.backends.sqlfiles import parse_queries

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
DIALECTS = ("mysql", "postgresql", "sqlite")


@cache
def named_queries(dialect: str) -> dict[str, str]:
    """Every test query of a dialect, {name: statement}."""
    return parse_queries((SQL_DIR / f"{dialect}.sql").read_text("utf-8"))


def query(dialect: str, name: str) -> str:
    """One test query of a dialect, by name."""
    try:
        return named_queries(dialect)[name]
    except KeyError:
        raise KeyError(f"tests/sql/{dialect}.sql has no query {name!r}") from None
