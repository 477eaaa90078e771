"""The fenced code blocks of the README and docs/ (issue 26): each one found, with the HTML
comment that may precede it, and what the documentation tests do with it.

A block is exempt when the line before it (blank lines aside) is ``<!-- not run: REASON -->``
with a reason; ``<!-- run: NAME -->`` says a named test runs it (``NAMED_RUNS``). An unmarked
block of a language in ``RUN_LANGS`` is run by tests/acceptance/test_doc_examples.py, one page
at a time; one in ``SYNTAX_LANGS`` is checked for syntax; any other must be marked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import ROOT

RUN_LANGS = frozenset({"python", "py", "sh", "bash", "shell", "console"})
# cron and ini: tests/unit/test_cron_and_systemd_examples.py; the others: test_doc_blocks.py.
SYNTAX_LANGS = frozenset({"cron", "ini", "toml", "yaml", "yml", "json"})
# `<!-- run: NAME -->`: the test that runs the blocks of that name, reading them from their page.
NAMED_RUNS = {
    "quickstart": "tests/acceptance/test_quickstart.py",
    "testing-shop": "tests/acceptance/test_user_testing_helpers.py",
}

_OPEN = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\n]*)$")
_MARK = re.compile(r"^\s*<!--\s*(?P<kind>not run|run):(?P<text>.*?)-->\s*$")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the checkout's root
    line: int  # of the opening fence, 1-based
    lang: str  # the info string's first word, lower case ("" when none)
    code: str  # without the fences and the fence's indentation
    mark: str | None  # "not run", "run", or None
    mark_text: str  # the reason, or the name, stripped

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def verdict(self) -> str:
        """'run' (a test runs it), 'syntax' (checked), 'marked' (exempt) or 'unchecked'."""
        if self.mark == "not run":
            return "marked"
        if self.mark == "run" or self.lang in RUN_LANGS:
            return "run"
        return "syntax" if self.lang in SYNTAX_LANGS else "unchecked"


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def parse(text: str, page: str) -> list[Block]:
    """Every fenced block of a Markdown text, indented ones (in lists) too."""
    lines, found, i = text.split("\n"), [], 0
    while i < len(lines):
        opened = _OPEN.match(lines[i])
        if not opened:
            i += 1
            continue
        indent, fence = len(opened["indent"]), opened["fence"]
        closing = re.compile(rf" {{0,{indent + 3}}}{fence[0]}{{{len(fence)},}}\s*")
        end = i + 1
        while end < len(lines) and not closing.fullmatch(lines[end]):
            end += 1
        code = "\n".join(line[indent:] for line in lines[i + 1 : end])
        mark, mark_text = _mark_before(lines, i)
        lang = (opened["info"].split() or [""])[0].lower()
        found.append(Block(page, i + 1, lang, code + "\n" if code else "", mark, mark_text))
        i = end + 1
    return found


def _mark_before(lines: list[str], at: int) -> tuple[str | None, str]:
    before = at - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    if before < 0 or not (m := _MARK.match(lines[before])):
        return None, ""
    return m["kind"], m["text"].strip()


def all_blocks(root: Path = ROOT) -> list[Block]:
    return [b for p in pages(root) for b in parse(p.read_text("utf-8"), str(p.relative_to(root)))]


def named(name: str, page: str) -> list[Block]:
    """The blocks of ``page`` marked ``<!-- run: NAME -->``, in order (a test that runs them)."""
    blocks = parse((ROOT / page).read_text("utf-8"), page)
    return [b for b in blocks if b.mark == "run" and b.mark_text == name]


def problems(blocks: list[Block]) -> list[str]:
    """What is wrong with the blocks' marks: one line a block."""
    wrong = []
    for b in blocks:
        if b.mark == "not run" and not b.mark_text:
            wrong.append(f"{b.where}: `<!-- not run: -->` without a reason")
        elif b.mark == "run" and b.mark_text not in NAMED_RUNS:
            wrong.append(f"{b.where}: `<!-- run: {b.mark_text} -->` names no test (NAMED_RUNS)")
        elif b.verdict == "unchecked":
            wrong.append(
                f"{b.where}: a ```{b.lang or '(no language)'} block nothing runs or checks: "
                "make it run, or put `<!-- not run: REASON -->` before it"
            )
    return wrong
