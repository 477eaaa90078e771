"""The documentation site builds strictly (scripts/docs: `mkdocs build --strict`): a link to a
page, an anchor or a repository file that is not there, an API object mkdocstrings cannot find,
or a click command mkdocs-click cannot render fails the build, and so this test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import ROOT


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """scripts/docs of the checkout at ``root``, into ``site``."""
    return subprocess.run(
        [str(root / "scripts" / "docs"), str(site)],
        cwd=root,
        env={**os.environ, "TMPDIR": str(site.parent), "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = build(ROOT, tmp_path / "site")
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


@pytest.mark.parametrize(
    ("page", "line", "says"),
    [
        ("docs/speed.md", "[x](guarantees.md)", "not found among documentation files"),
        ("docs/speed.md", "[x](concepts/guarantees.md#no-such-part)", "does not contain an anchor"),
        ("docs/speed.md", "[x](../examples/no_such_app.py)", "no such file in the repository"),
        ("docs/not-in-nav.md", "# Lost", 'not included in the "nav"'),
    ],
)
def test_a_broken_link_or_a_page_out_of_the_nav_fails_the_build(
    tmp_path: Path, page: str, line: str, says: str
) -> None:
    """On a copy of the checkout's files: scripts/docs must exit non-zero, not just print."""
    copy = tmp_path / "checkout"
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in listed.stdout.splitlines():
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    with (copy / page).open("a", encoding="utf-8") as f:
        f.write(f"\n{line}\n")
    done = build(copy, tmp_path / "site")
    assert done.returncode != 0 and says in done.stdout + done.stderr, done.stdout + done.stderr


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of ``page``'s headings (fenced code skipped)."""
    found, fenced = set(), False
    for line in page.read_text("utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#+ (.*)", line)):
            found.add(re.sub(r"[^\w\- ]", "", m[1].strip().lower()).replace(" ", "-"))
    return found


def test_every_link_of_the_readme_leads_somewhere() -> None:
    """The README is not a page of the site, so the strict build does not check its links."""
    readme = ROOT / "README.md"
    links = re.findall(r"\]\(([^)\s]+)\)", readme.read_text("utf-8"))
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(local) > 20
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else readme
        assert target.exists(), link
        assert not anchor or anchor in _anchors(target), link
