"""Named SQL queries and migrations, read from the top-level ``sql/<dialect>/`` folders.

Each ``<dialect>/*.sql`` file (``queries.sql``, ``mq.sql``) is a list of blocks headed
``-- name: NAME`` followed by one line of description; Python refers to queries only by name.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

SQL_PACKAGE = "batchq.sql"  # the top-level sql/ folder, installed as data
_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


def parse_queries(text: str) -> dict[str, str]:
    """Split a queries file into {name: statement}, dropping comment lines."""
    parts = _HEADER.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        lines = [line for line in body.splitlines() if not line.lstrip().startswith("--")]
        statement = "\n".join(lines).strip().rstrip(";").strip()
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        queries[name] = statement
    return queries


@cache
def queries(dialect: str) -> dict[str, str]:
    """Every named query of a dialect, from each ``*.sql`` file beside its migrations."""
    merged: dict[str, str] = {}
    for entry in sorted((files(SQL_PACKAGE) / dialect).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            found = parse_queries(entry.read_text("utf-8"))
            if clash := merged.keys() & found.keys():
                raise ValueError(f"{dialect}/{entry.name} redefines {sorted(clash)}")
            merged.update(found)
    return merged


def migrations(dialect: str) -> list[tuple[int, str, list[str]]]:
    """[(version, file name, [statements])] in order."""
    folder = files(SQL_PACKAGE) / dialect / "migrations"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            found.append((version, entry.name, split_statements(entry.read_text("utf-8"))))
    return sorted(found)


def split_statements(text: str) -> list[str]:
    """Split a schema file on semicolons that end a line (our .sql files keep to that)."""
    statements, current = [], []
    for line in text.splitlines():
        if line.lstrip().startswith("--"):
            continue
        current.append(line)
        if line.rstrip().endswith(";"):
            statements.append("\n".join(current).strip().rstrip(";"))
            current = []
    tail = "\n".join(current).strip()
    if tail:
        statements.append(tail)
    return [s for s in statements if s]
