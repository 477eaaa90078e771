"""Every code block of the README and docs/ runs in a test, is checked for syntax, or is marked
`<!-- not run: REASON -->` (issue 26; tests/support/docblocks.py says how a block is classed).
The python/sh/console blocks run in tests/acceptance/test_doc_examples.py, the crontabs and the
systemd unit are checked in test_cron_and_systemd_examples.py, the rest here."""

from __future__ import annotations

import json
import sys
from collections import Counter

import pytest
import yaml

from tests.support.docblocks import NAMED_RUNS, Block, all_blocks, named, parse, problems
from tests.support.processes import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BLOCKS = all_blocks()
_CHECKERS = {"toml": tomllib.loads, "yaml": yaml.safe_load, "yml": yaml.safe_load, "json": json.loads}


def test_every_block_is_run_checked_or_marked_with_a_reason() -> None:
    assert len(BLOCKS) > 50
    assert problems(BLOCKS) == []


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang in _CHECKERS and b.mark is None], ids=str)
def test_block_syntax(block: Block) -> None:
    _CHECKERS[block.lang](block.code)


@pytest.mark.parametrize(("name", "test_file"), sorted(NAMED_RUNS.items()))
def test_a_named_run_is_read_by_its_test(name: str, test_file: str) -> None:
    """A `<!-- run: NAME -->` block is run by the test NAMED_RUNS names, which reads it by name."""
    assert any(b.mark == "run" and b.mark_text == name for b in BLOCKS), name
    assert f'named("{name}"' in (ROOT / test_file).read_text("utf-8"), test_file


def test_the_count() -> None:
    """The tally (pytest -s shows it): blocks run, checked for syntax, marked (by reason)."""
    verdicts = Counter(b.verdict for b in BLOCKS)
    reasons = Counter(b.mark_text for b in BLOCKS if b.verdict == "marked")
    print(f"\ndoc blocks: {dict(verdicts)}")
    for reason, n in reasons.most_common():
        print(f"  {n:3} not run: {reason}")
    assert verdicts["unchecked"] == 0


# The checker's must-fail cases: a page with one such block is refused.
@pytest.mark.parametrize(
    ("page", "says"),
    [
        ("```text\nsome output\n```\n", "nothing runs or checks"),
        ("```\nbatchq run\n```\n", "(no language) block"),
        ("<!-- not run: -->\n```text\nx\n```\n", "without a reason"),
        ("<!-- not run:    -->\n\n```python\nx\n```\n", "without a reason"),
        ("<!-- run: nobody -->\n```python\nx\n```\n", "names no test"),
        ("  - a list item:\n\n    ```sql\n    SELECT 1;\n    ```\n", "```sql block"),
    ],
)
def test_an_unmarked_unchecked_block_is_refused(page: str, says: str) -> None:
    [wrong] = problems(parse(f"# A page\n\n{page}\nMore text.\n", "docs/new.md"))
    assert wrong.startswith("docs/new.md:") and says in wrong, wrong


def test_marks_and_fences_are_read_as_markdown_has_them() -> None:
    text = (
        "<!-- not run: needs a mail server -->\n\n```python\nsend()\n```\n"
        "<!-- run: quickstart -->\n````sh\n```\nnested\n```\n````\n"
        "1. step\n\n   ~~~yaml\n   a: 1\n   ~~~\n"
        "```text\nx\n```\n"
    )
    a, b, c, d = parse(text, "p.md")
    assert (a.verdict, a.mark_text, a.code, a.line) == ("marked", "needs a mail server", "send()\n", 3)
    assert (b.verdict, b.lang, b.code) == ("run", "sh", "```\nnested\n```\n")
    assert (c.verdict, c.lang, c.code) == ("syntax", "yaml", "a: 1\n")
    assert (d.verdict, d.mark) == ("unchecked", None)  # a mark covers only the block right after it


def test_a_new_unmarked_block_in_the_docs_fails_the_check(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The real pages plus one new page with an unmarked text block: the check is no longer empty."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text((ROOT / "README.md").read_text("utf-8"), "utf-8")
    (tmp_path / "docs" / "new.md").write_text("# New\n\n```text\n$ batchq stats\n```\n", "utf-8")
    assert problems(all_blocks(tmp_path)) == [
        "docs/new.md:3: a ```text block nothing runs or checks: make it run, or put "
        "`<!-- not run: REASON -->` before it"
    ]


def test_named_finds_the_quickstart() -> None:
    assert [b.lang for b in named("quickstart", "README.md")] == ["python", "python", "sh", "cron"]
