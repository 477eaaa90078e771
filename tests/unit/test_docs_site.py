"""The documentation site builds strictly (scripts/docs: `mkdocs build --strict`): a link to a
page, an anchor or a repository file that is not there, an API object mkdocstrings cannot find,
or a click command mkdocs-click cannot render fails the build, and so this test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.processes import ROOT


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(ROOT / "scripts" / "docs"), str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path), "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    queue = (site / "reference" / "api" / "queue" / "index.html").read_text("utf-8")
    assert "batchq.Queue.enqueue" in queue  # the API reference rendered from the docstrings
    cli = (site / "reference" / "cli-full" / "index.html").read_text("utf-8")
    assert "--max-seconds" in cli and "gc-processing" in cli  # the CLI reference, from click
    tutorial = (site / "tutorial" / "index.html").read_text("utf-8")
    assert "Queue().enqueue(send_mail" in re.sub(r"<[^>]+>", "", tutorial)  # the README's quickstart
    # Offline and private: no page loads a font, script or stylesheet from another site.
    for page in site.rglob("*.html"):
        text = page.read_text("utf-8")
        assert 'src="http' not in text and "fonts.googleapis" not in text, page


def test_every_environment_variable_the_code_reads_is_documented() -> None:
    code = "\n".join(p.read_text("utf-8") for p in (ROOT / "batchq").rglob("*.py"))
    names = set(re.findall(r'"(BATCHQ_[A-Z_]+)"', code))
    page = (ROOT / "docs" / "reference" / "environment.md").read_text("utf-8")
    assert names and names <= set(re.findall(r"`(BATCHQ_[A-Z_]+)`", page)), names
