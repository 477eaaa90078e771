"""The crontabs and the systemd unit the documentation shows are checked for syntax (issue 26):
every crontab line of crontab.example and of each ```cron block in the README and docs/ is an
environment setting or a valid schedule (croniter) whose `batchq` command click parses (every
subcommand, option and value as the code has them, nothing run); every ```ini unit is
sections of `Key=Value` lines with no inline comment (systemd has none: a `# ...` after a value
becomes part of it), and its ExecStart's batchq command parses too."""

from __future__ import annotations

import re
import shlex

import click
import pytest
from croniter import croniter

from batchq.cli import cli
from tests.support.processes import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
_GLOBAL_FLAGS = {"-v", "-vv", "-vvv", "--verbose"}


def _blocks(lang: str) -> list[tuple[str, str]]:
    """[(where, code)] of every ```lang block in the README and docs/ (indented ones too)."""
    found = []
    for page in PAGES:
        text = page.read_text("utf-8")
        for m in re.finditer(rf"^( *)```{lang}\n(.*?)^\1```$", text, re.MULTILINE | re.DOTALL):
            code = "\n".join(line[len(m[1]) :] for line in m[2].splitlines())
            found.append((f"{page.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}", code))
    return found


def check_batchq_args(args: list[str]) -> list[str]:
    """Parse ``args`` (what follows `batchq`) as the CLI would, running nothing; the path of
    the command they name. Raises click.UsageError (or BadParameter) as the CLI would."""
    rest = list(args)
    while rest and rest[0].startswith("-"):  # batchq's own options, before the command
        flag = rest.pop(0)
        if flag == "--url":
            rest.pop(0)
        elif flag not in _GLOBAL_FLAGS:
            raise click.UsageError(f"no such option before the command: {flag}")
    command: click.Command = cli
    path = ["batchq"]
    while isinstance(command, click.Group):
        if not rest:
            raise click.UsageError(f"{' '.join(path)}: no command")
        sub = command.get_command(click.Context(command), rest[0])
        if sub is None:
            raise click.UsageError(f"{' '.join(path)}: no such command {rest[0]!r}")
        command, path = sub, [*path, rest.pop(0)]
    command.make_context(" ".join(path), rest)
    return path


def _batchq_command(shell: str) -> list[str]:
    """The arguments after `batchq` in a crontab line's or ExecStart's command."""
    last = shell.split("&&")[-1]
    words = shlex.split(last, comments=True)
    [at] = [i for i, word in enumerate(words) if word == "batchq" or word.endswith("/batchq")]
    return words[at + 1 :]


def _crontab_lines() -> list[tuple[str, str]]:
    blocks = [("crontab.example", (ROOT / "crontab.example").read_text("utf-8")), *_blocks("cron")]
    return [(where, line) for where, code in blocks for line in code.splitlines()]


def test_the_documentation_shows_crontabs_and_a_unit() -> None:
    assert len(_blocks("cron")) >= 5 and len(_blocks("ini")) >= 1


def test_the_readme_crontab_is_crontab_example_s() -> None:
    """The README shows crontab.example's lines (without its comments): none differs from it."""
    example = set((ROOT / "crontab.example").read_text("utf-8").splitlines())
    [readme] = [code for where, code in _blocks("cron") if where.startswith("README") and "MAILTO" in code]
    assert [line for line in readme.splitlines() if line not in example] == []


@pytest.mark.parametrize(("where", "line"), _crontab_lines())
def test_crontab_line(where: str, line: str) -> None:
    line = line.strip()
    if not line or line.startswith("#") or _ENV.match(line):
        return
    fields = line.split(None, 5)
    assert len(fields) == 6, f"{where}: not a schedule and a command: {line!r}"
    assert croniter.is_valid(" ".join(fields[:5])), f"{where}: bad schedule in {line!r}"
    assert "%" not in fields[5], f"{where}: cron turns % into a newline: {line!r}"
    check_batchq_args(_batchq_command(fields[5]))


@pytest.mark.parametrize(("where", "unit"), _blocks("ini"))
def test_systemd_unit(where: str, unit: str) -> None:
    sections, exec_start = [], None
    for line in unit.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if re.fullmatch(r"\[[A-Za-z]+\]", line):
            sections.append(line)
            continue
        key, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[A-Za-z]+", key), f"{where}: not Key=Value: {line!r}"
        assert " #" not in value and " ;" not in value, f"{where}: systemd has no inline comments: {line!r}"
        if key == "ExecStart":
            exec_start = value
    assert sections == ["[Unit]", "[Service]", "[Install]"], f"{where}: sections {sections}"
    assert exec_start, f"{where}: no ExecStart"
    assert check_batchq_args(_batchq_command(exec_start))[:2] == ["batchq", "run"]


def test_the_checker_refuses_what_the_cli_refuses() -> None:
    assert check_batchq_args(["-v", "run", "--tick", "--max-seconds", "55"]) == ["batchq", "run"]
    for bad in (
        ["run", "--nope"],
        ["run", "--wait", "soon"],
        ["nope"],
        ["mq"],
        ["gc-error", "--requeue", "x"],
    ):
        with pytest.raises(click.UsageError):
            check_batchq_args(bad)
