"""SQL parts (batchq.backends.sqlfiles): a piece of SQL that several statements of a dialect share, put in
where a statement names it on a line of its own."""

from __future__ import annotations

import re
from importlib.resources import files
from importlib.resources.abc import Traversable

import pytest

from batchq.backends.sqlfiles import SQL_PACKAGE, parse_queries, queries
from tests.support.queries import DIALECTS

FILE = """
-- name: claim
-- A claim.
WITH done AS (
    {{finished}}
    RETURNING 1
)
{{mark}};

-- part: finished
-- Nested, and indented as the line that uses it.
DELETE FROM job WHERE true
  {{fence}}

-- part: fence
-- The fence.
AND token = :token

-- part: mark
-- Two statements: the semicolons stay, the statement's last one goes.
UPDATE job SET status = 'processing';
COMMIT;
"""


def test_a_part_is_put_in_at_the_indentation_of_its_line_and_may_use_parts() -> None:
    assert parse_queries(FILE) == {
        "claim": (
            "WITH done AS (\n"
            "    DELETE FROM job WHERE true\n"
            "      AND token = :token\n"
            "    RETURNING 1\n"
            ")\n"
            "UPDATE job SET status = 'processing';\n"
            "COMMIT"
        )
    }


def test_a_part_that_uses_itself_is_refused() -> None:
    looped = "-- name: q\n-- x\n{{a}}\n\n-- part: a\n-- x\nSELECT\n{{b}}\n\n-- part: b\n-- x\n{{a}}\n"
    with pytest.raises(ValueError, match="part 'a' uses itself"):
        parse_queries(looped)


def test_a_part_defined_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="part 'a' is defined twice"):
        parse_queries("-- part: a\n-- x\nSELECT 1\n\n-- part: a\n-- x\nSELECT 2\n")


def test_a_file_read_alone_leaves_the_parts_of_other_files_as_they_are() -> None:
    assert parse_queries("-- name: q\n-- x\nSELECT\n{{elsewhere}}\n") == {"q": "SELECT\n{{elsewhere}}"}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_part_is_put_in_and_used(dialect: str) -> None:
    statements = queries(dialect)
    assert not [name for name, sql in statements.items() if "{{" in sql]
    folder = _sql_folder(dialect)
    texts = [entry.read_text("utf-8") for entry in folder.iterdir() if entry.name.endswith(".sql")]
    defined = {name for text in texts for name in re.findall(r"^-- part: (\w+)", text, re.MULTILINE)}
    used = {name for text in texts for name in re.findall(r"^\s*\{\{(\w+)\}\}\s*$", text, re.MULTILINE)}
    assert defined == used, f"parts defined but never used: {sorted(defined - used)}"


def _sql_folder(dialect: str) -> Traversable:
    return files(SQL_PACKAGE) / dialect
