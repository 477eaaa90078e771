"""`batchq locks`: the lock table as an operator sees it, and `batchq locks release NAME --force`."""

from __future__ import annotations

from dataclasses import asdict

import click

from ..coordination.locks import LockInfo, check_lock_name, force_release, list_locks
from .common import age, common_options, fail, open_queue, print_json, usage_error


@click.group("locks", invoke_without_command=True)
@common_options
@click.option("--all", "include_free", is_flag=True, help="Also list free locks and slots.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def locks(ctx: click.Context, include_free: bool, as_json: bool) -> None:
    """Locks and semaphore slots that are held (or expired and not released): name, slot,
    holder, state, expires in (on the database server's clock), fencing token."""
    if ctx.invoked_subcommand is not None:
        return
    rows = list_locks(open_queue(ctx).database, include_free=include_free)
    if as_json:
        print_json([asdict(info) for info in rows])
        return
    width = max([20, *(len(_shown(info.name)) for info in rows)])
    click.echo(f"{'name':<{width}} {'slot':>4} {'holder':<40} {'state':<8} {'expires in':>10} {'token':>8}")
    for info in rows:
        click.echo(
            f"{_shown(info.name):<{width}} {info.slot:>4} {_holder(info):<40} "
            f"{info.state:<8} {_expires(info):>10} {info.token:>8}"
        )


@locks.command("release")
@common_options
@click.argument("name")
@click.option("--force", is_flag=True, help="Required: the holder learns of it only at its next renew.")
@click.pass_context
def release(ctx: click.Context, name: str, force: bool) -> None:
    """Free lock NAME (every slot of a semaphore NAME), whoever holds it.

    Its holders get LockLost at their next renew() or release(); until then they may still be
    working, so fence what they write with the lock's token. Exit 1 when nothing was held.
    """
    if not force:
        usage_error("releasing a lock others hold needs --force: add it (they learn at their next renew)")
    check_lock_name(name)
    queue = open_queue(ctx)
    holdings = list_locks(queue.database, name=name)
    if force_release(queue.database, name) == 0:
        fail(f"lock {name!r} is not held: nothing released (see `batchq locks --all`)")
    for info in holdings:
        holder = f"held by {_holder(info)}" if info.held else f"expired, last held by {_last(info)}"
        click.echo(f"released {name} slot {info.slot} (token {info.token}, {holder})")


def _expires(info: LockInfo) -> str:
    if not info.held:
        return "-"
    return age(info.expires_in)


def _holder(info: LockInfo) -> str:
    if not info.held:
        return "-"
    return _shown(info.holder) if info.holder is not None else "(unknown)"  # lock_by NULL, by hand


def _last(info: LockInfo) -> str:
    return _shown(info.last_holder) if info.last_holder else "nobody recorded"


def _shown(text: str) -> str:
    """A name or holder as one printable line: a row written by hand may hold anything."""
    return text if text.isprintable() else repr(text)
