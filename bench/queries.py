"""The SQL the benchmarks run beyond batchq's own, by name: one ``bench/sql/<dialect>.sql`` per
dialect, in the format of the product's ``sql/<dialect>/*.sql`` (``-- name: X``, one line of
description, the statement). batchq's own statements come from ``batchq.backends.sqlfiles.queries``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from batchq.backends.sqlfiles import parse_queries

SQL_DIR = Path(__file__).resolve().parent / "sql"


@cache
def bench_queries(dialect: str) -> dict[str, str]:
    """Every benchmark query of a dialect, {name: statement}."""
    return parse_queries((SQL_DIR / f"{dialect}.sql").read_text("utf-8"))


def bench_query(dialect: str, name: str) -> str:
    try:
        return bench_queries(dialect)[name]
    except KeyError:
        raise KeyError(f"bench/sql/{dialect}.sql has no query {name!r}") from None
