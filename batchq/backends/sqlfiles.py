"""Named SQL queries and migrations, read from the top-level ``sql/<dialect>/`` folders.

Each ``<dialect>/*.sql`` file (``jobs.sql``, ``mq.sql``, ``connection.sql``, ...) is a list of blocks headed
``-- name: NAME`` followed by one line of description; Python refers to queries only by name.

A block headed ``-- part: NAME`` is a piece of SQL that several statements of a dialect share
(the claim's marking step, the history's upsert): a query uses it by a line of its own,
``{{NAME}}``, which becomes the part's lines at that line's indentation. Parts are put in when
the files are read, so the statements the database sees are whole, as written out by hand.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

SQL_PACKAGE = "batchq.sql"  # the top-level sql/ folder, installed as data
_HEADER = re.compile(r"^-- (name|part): (\w+)\s*$", re.MULTILINE)
_USE = re.compile(r"^(\s*)\{\{(\w+)\}\}\s*$", re.MULTILINE)


def parse_queries(text: str) -> dict[str, str]:
    """Split a queries file into {name: statement}, dropping comment lines and putting in the
    parts the file defines (a part of another file of the dialect is left as its ``{{NAME}}``
    line: ``queries`` puts in every part)."""
    found, parts = _parse_blocks(text)
    return _with_parts(found, parts, strict=False)


def _parse_blocks(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """({query name: statement}, {part name: SQL}) of one file, as written (parts not put in)."""
    pieces = _HEADER.split(text)
    blocks: dict[str, dict[str, str]] = {"name": {}, "part": {}}
    for kind, name, body in zip(pieces[1::3], pieces[2::3], pieces[3::3]):
        lines = [line for line in body.splitlines() if not line.lstrip().startswith("--")]
        if name in blocks[kind]:
            raise ValueError(f"{'query' if kind == 'name' else 'part'} {name!r} is defined twice")
        sql = "\n".join(lines).strip("\n").rstrip()
        # A part keeps its first line's indentation (relative to the line that uses it) and its
        # semicolons (a MySQL multi-statement query's statements end in them).
        blocks[kind][name] = sql if kind == "part" else sql.rstrip(";").strip()
    return blocks["name"], blocks["part"]


def _with_parts(found: dict[str, str], parts: dict[str, str], strict: bool = True) -> dict[str, str]:
    """The statements with each ``{{PART}}`` line replaced by that part, indented as the line (a
    part may use other parts); an unknown part is an error if ``strict``, else left as it is."""

    def put_in(text: str, using: tuple[str, ...]) -> str:
        def one(use: re.Match[str]) -> str:
            indent, name = use.group(1), use.group(2)
            if name not in parts and not strict:
                return use.group(0)
            if name not in parts:
                raise ValueError(f"no SQL part named {name!r}: define it under '-- part: {name}'")
            if name in using:
                raise ValueError(f"SQL part {name!r} uses itself (through {' -> '.join(using)})")
            body = put_in(parts[name], (*using, name))
            return "\n".join(indent + line if line else line for line in body.splitlines())

        return _USE.sub(one, text)

    return {name: put_in(statement, ()).rstrip().rstrip(";").rstrip() for name, statement in found.items()}


@cache
def queries(dialect: str) -> dict[str, str]:
    """Every named query of a dialect, from each ``*.sql`` file beside its migrations (a part
    defined in one file may be used in any)."""
    merged: dict[str, str] = {}
    parts: dict[str, str] = {}
    for entry in sorted((files(SQL_PACKAGE) / dialect).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            found, defined = _parse_blocks(entry.read_text("utf-8"))
            if clash := (merged.keys() & found.keys()) | (parts.keys() & defined.keys()):
                raise ValueError(f"{dialect}/{entry.name} redefines {sorted(clash)}")
            merged.update(found)
            parts.update(defined)
    return _with_parts(merged, parts)


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
