"""CHANGELOG.md (Keep a Changelog) names the version pyproject.toml builds, as its newest
numbered heading, under an Unreleased heading; the version policy page it points to exists."""

from __future__ import annotations

import re
import sys

from tests.support.processes import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_the_changelog_s_newest_version_is_pyproject_s() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    text = (ROOT / "CHANGELOG.md").read_text("utf-8")
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert headings[0] == "Unreleased", headings
    numbered = [h for h in headings if re.match(r"\d+\.\d+\.\d+ ", h)]
    assert numbered and numbered[0].startswith(f"{version} - "), (version, numbered)
    sections = set(re.findall(r"^### (.+)$", text, re.MULTILINE))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, sections
    assert "docs/reference/versions.md" in text and (ROOT / "docs/reference/versions.md").is_file()
