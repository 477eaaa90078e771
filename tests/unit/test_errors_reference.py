"""docs/reference/errors.md lists every error class batchq exports, with its bases and the exit
status the `batchq` command gives it (cli/common.py's status_of): a class added, moved under
another base, or given another status fails here until the page says so."""

from __future__ import annotations

import inspect
import re

import batchq
from batchq.cli.common import status_of
from batchq.errors import BatchqError
from tests.support.processes import ROOT

PAGE = ROOT / "docs" / "reference" / "errors.md"
_ROW = re.compile(r"^\| `(?P<name>\w+)` \| (?P<bases>[^|]+) \| [^|]+ \| (?P<status>\d) \|$", re.MULTILINE)


def exported_errors() -> dict[str, type[BatchqError]]:
    return {
        name: value
        for name, value in vars(batchq).items()
        if inspect.isclass(value) and issubclass(value, BatchqError)
    }


def test_every_exported_error_has_its_row_with_its_bases_and_exit_status() -> None:
    rows = {m["name"]: m for m in _ROW.finditer(PAGE.read_text("utf-8"))}
    errors = exported_errors()
    assert len(errors) > 10 and set(rows) == set(errors), set(rows) ^ set(errors)
    for name, cls in errors.items():
        bases = ", ".join(f"`{base.__name__}`" for base in cls.__bases__)
        assert rows[name]["bases"].strip() == bases, name
        assert int(rows[name]["status"]) == status_of(cls.__new__(cls)), name


def test_every_error_of_batchq_errors_is_exported() -> None:
    from batchq import errors

    defined = {n for n, v in vars(errors).items() if inspect.isclass(v) and issubclass(v, BatchqError)}
    assert defined == set(exported_errors())
