"""MkDocs hook: links from a page to the repository's own files outside docs/ (`../examples/...`,
`../README.md`, `../crontab.example`) would be broken links on the site. Each one must name a file
or folder that exists in the checkout (else the build fails), and is shown as that path in code:
the site has no copy of it, and a reader with the repository finds it there."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<url>\.\./[^)\s#]+)(?:#[^)\s]*)?\)")
_FENCE = re.compile(r"^(```|~~~)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    here = (docs / page.file.src_path).parent

    def outside(match: re.Match[str]) -> str:
        target = (here / match["url"]).resolve()
        if target.is_relative_to(docs):
            return match[0]  # a page's link into docs/: MkDocs validates it
        if not target.exists():
            raise PluginError(f"{page.file.src_path}: link to {match['url']}: no such file in the repository")
        path = target.relative_to(root).as_posix()
        text = match["text"]
        return text if text.strip("`").rstrip("/") == path else f"{text} (`{path}`)"

    out, fenced = [], False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        out.append(line if fenced else _LINK.sub(outside, line))
    return "".join(out)
