"""pyproject.toml lists its packages by hand (batchq.sql comes from another folder): every
package under batchq/ must be in the list, or the wheel installs without it (batchq.stores did,
and `import batchq` failed in a fresh virtualenv)."""

from __future__ import annotations

import sys

from tests.support.processes import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_every_package_of_the_tree_is_in_the_wheel() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    listed = set(pyproject["tool"]["setuptools"]["packages"])
    in_tree = {
        ".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "batchq").rglob("__init__.py")
    }
    assert in_tree - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert listed - in_tree == {"batchq.sql"}  # package-dir maps it to sql/
