"""`batchq partitions`: the partitions of partitioned claims, and `batchq partitions set N`."""

from __future__ import annotations

from dataclasses import asdict

import click

from ..coordination.partitions import MAX_PARTITIONS, PartitionInfo
from .common import age, common_options, open_queue, print_json


@click.group("partitions", invoke_without_command=True)
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def partitions(ctx: click.Context, as_json: bool) -> None:
    """The partitions of `batchq run --claim partition`: which worker leases each and for how
    long yet (on the database server's clock). Nothing when they are not set up."""
    if ctx.invoked_subcommand is not None:
        return
    rows = open_queue(ctx).partitions()
    if as_json:
        print_json([asdict(info) for info in rows])
        return
    if rows:
        click.echo(f"{'partition':>9} {'holder':<40} {'expires in':>10}")
    for info in rows:
        click.echo(f"{info.partition:>9} {_holder(info):<40} {_expires(info):>10}")


@partitions.command("set")
@common_options
@click.argument("count", type=click.IntRange(0, MAX_PARTITIONS))
@click.pass_context
def set_count(ctx: click.Context, count: int) -> None:
    """Spread jobs over COUNT partitions (for example 16; at least the number of workers that
    run with --claim partition). Builds the index partitioned claims walk (0: drops it and
    switches them off). Producers learn the new count within a minute; waiting jobs in
    partitions that no longer exist are moved."""
    open_queue(ctx).set_partitions(count)


def _holder(info: PartitionInfo) -> str:
    if not info.held:
        return "-"
    holder = info.holder or "(unknown)"
    return holder if holder.isprintable() else repr(holder)


def _expires(info: PartitionInfo) -> str:
    return "-" if info.expires_in is None else age(info.expires_in)
