"""Render the command reference (docs/reference/cli.md) from the click commands themselves, so it
cannot drift.

`.venv/bin/python scripts/command_reference.py` rewrites the table between that page's
`<!-- commands -->` markers: one row per command and subcommand, with every option and argument
and the first paragraph of its help. `--check` changes nothing and exits 1 when the page
differs (tests/unit/test_command_reference.py runs the same comparison). To change a row, change
the command (its options, metavars, docstring), then run this.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from batchq.cli import cli

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "cli.md"
BEGIN = (
    "<!-- commands: generated from the click commands by scripts/command_reference.py; "
    "change a command, then run it -->"
)
END = "<!-- /commands -->"
SHARED = {"url", "verbose"}  # every command's --url and -v: in the `batchq` row and under the table
NUMBERS = (click.types.IntParamType, click.types.FloatParamType)


def render() -> str:
    """The table, from the `batchq` group down to every subcommand."""
    rows = [
        "| command | what it does |",
        "|---|---|",
        *(_row(path, command) for path, command in _commands(cli, "batchq")),
    ]
    return "\n".join(rows)


def render_page(text: str) -> str:
    """``text`` (the page) with the table between the markers replaced by render()."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{PAGE.name}: no {BEGIN!r} ... {END!r} markers around the command table")
    return f"{text[: start + len(BEGIN)]}\n\n{render()}\n\n{text[end:]}"


def _commands(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    """Every command under ``command`` in the order --help lists them; a group gets a row of its
    own only when it does something without a subcommand (`batchq locks`)."""
    group = isinstance(command, click.Group)
    if not group or command.invoke_without_command or path == "batchq":
        yield path, command
    if group:
        ctx = click.Context(command, info_name=path)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, f"{path} {name}")


def _row(path: str, command: click.Command) -> str:
    words = [path, *_synopsis(command, shared=path == "batchq")]
    if isinstance(command, click.Group) and not command.invoke_without_command:
        words.append("COMMAND ...")
    usage = " ".join(words)
    return f"| `{_cell(usage)}` | {_cell(_summary(command))} |"


def _synopsis(command: click.Command, shared: bool) -> Iterator[str]:
    """Arguments, then options in the order --help lists them; flags that set one value are
    alternatives (`[--failed | --succeeded]`)."""
    params = [p for p in command.params if shared or p.name not in SHARED]
    for param in params:
        if isinstance(param, click.Argument):
            name = param.human_readable_name
            yield name if param.required else f"[{name}]"
    seen: set[str | None] = set()
    for param in params:
        if isinstance(param, click.Option) and param.name not in seen:
            seen.add(param.name)
            yield _option([p for p in params if isinstance(p, click.Option) and p.name == param.name])


def _option(options: list[click.Option]) -> str:
    text = " | ".join(_one_option(option) for option in options)
    first = options[0]
    if first.multiple:
        text += " ..."
    return text if first.required else f"[{text}]"


def _one_option(option: click.Option) -> str:
    name = max(option.opts, key=len)  # --verbose over -v
    if option.is_flag or option.count:
        return name
    return f"{name} {_metavar(option)}"


def _metavar(option: click.Option) -> str:
    if option.metavar:
        return option.metavar
    kind = option.type
    if isinstance(kind, click.Choice):
        return "|".join(str(choice) for choice in kind.choices)
    if isinstance(kind, NUMBERS):
        return "N"
    if isinstance(kind, click.Path):
        return "PATH"
    if kind.name.isupper():  # batchq's own types: DURATION
        return kind.name
    return (option.name or "value").upper()


def _summary(command: click.Command) -> str:
    """The help's first paragraph, on one line."""
    first = re.split(r"\n\s*\n", (command.help or "").strip())[0]
    return " ".join(first.split())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    try:
        wanted = render_page(text)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    if argv[1:] == ["--check"]:
        if wanted != text:
            print(f"docs/reference/cli.md: the command reference differs from the commands: run {argv[0]}")
            return 1
        return 0
    if argv[1:]:
        print(f"usage: {argv[0]} [--check]", file=sys.stderr)
        return 2
    if wanted != text:
        PAGE.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
