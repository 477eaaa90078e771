"""`batchq mq`: the message queues (batchq.MessageQueue) as an operator tends them."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import click

from ..core.config import counted, format_duration, format_time
from ..errors import ConfigError
from ..mq import Message, MessageQueue, TopicBinding
from ..mq.archive import PRUNE_BATCH
from ..mq.core import MAX_QTY
from ..mq.overview import (
    MSG_ID_RANGE,
    PAGE_MAX,
    PAGE_SIZE,
    MessageQueueFigures,
    PeekedMessage,
    message_page,
    peek,
    purge_up_to,
    queue_figures,
)
from ..mq.routing import check_pattern, check_routing_key
from .common import DURATION, common_options, existing_only, fail, print_json, printable, usage_error
from .configure import (
    NOT_GIVEN,
    OFF,
    check_bound_options,
    describe_type,
    force_option,
    json_option,
    kept_overflow,
    max_length_option,
    overflow_option,
    print_settings,
    read_schema,
    schema_option,
)

log = logging.getLogger("batchq.mq")


@click.group("mq")
def mq() -> None:
    """Message queues (batchq.MessageQueue): list them, their figures, peek at messages, archive,
    delete, pop or purge them, configure a queue, prune the archive, bind topic patterns."""


@mq.command("prune")
@common_options
@click.option(
    "--older-than",
    "older_than",
    type=DURATION,
    required=True,
    help="Delete what was archived before then (30d).",
)
@click.option("--queue", "queue_name", default=None, metavar="QUEUE", help="Only this queue's archive.")
@click.option(
    "--batch",
    type=click.IntRange(1, 100_000),
    default=PRUNE_BATCH,
    show_default=True,
    help="Rows deleted per transaction: each holds its locks only that long.",
)
@click.pass_context
def prune(ctx: click.Context, older_than: float, queue_name: str | None, batch: int) -> None:
    """Delete archived messages older than --older-than (by their archived_at, on the database
    server's clock), in batches of --batch rows, each its own transaction, so archivers and
    readers never wait long. Quiet: -v prints how many went."""
    queues = MessageQueue(ctx.obj["url"])
    existing_only(queues)
    ctx.call_on_close(queues.close)
    pruned = queues.prune_archive(older_than, queue=queue_name, batch=batch)
    log.info("pruned %s", counted(pruned, "archived message"))


# -- the operator's view: list, stats, peek; archive, delete, purge; configure --------------


def _open(ctx: click.Context) -> MessageQueue:
    queues = MessageQueue(ctx.obj["url"])
    existing_only(queues)
    ctx.call_on_close(queues.close)
    return queues


_shown = printable


def _one(queues: MessageQueue, name: str) -> MessageQueueFigures:
    """The figures of the message queue ``name`` (any name a queue has, even one written by plain
    SQL); exit 1 when there is none."""
    found = queue_figures(queues.backend, name) if name and "\x00" not in name else []
    if not found:
        fail(f"no message queue {_shown(name)!r}: `batchq mq list` lists them")
    return found[0]


@mq.command("list")
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """Every message queue with its settings: bound and overflow, type, durability, and the topic
    and subscriber whose queue it is."""
    found = queue_figures(_open(ctx).backend)
    if as_json:
        print_json([_listed(f) for f in found])
        return
    if not found:
        click.echo("no message queues")
        return
    click.echo(f"{'queue':<24} {'created (UTC)':<19} {'bound':<18} {'type':<20} subscription")
    for f in found:
        bound = "-" if f.max_length is None else f"{f.max_length} {f.overflow}"
        created = format_time(f.created_at).removesuffix(" UTC")
        kind = _shown(f.type_name or "-")
        note = "" if f.durable else " (non-durable)"
        click.echo(f"{_shown(f.queue):<24} {created:<19} {bound:<18} {kind:<20} {_subscription(f)}{note}")


def _listed(f: MessageQueueFigures) -> dict[str, Any]:
    data = {k: v for k, v in f.as_dict().items() if k in LIST_FIELDS}
    return data


LIST_FIELDS = ("queue", "created_at", "max_length", "overflow", "durable", "type", "schema", "subscription")


def _subscription(f: MessageQueueFigures) -> str:
    s = f.subscription
    return "-" if s is None else f"topic {_shown(s.topic)}, subscriber {_shown(s.subscriber)} ({s.policy})"


@mq.command("stats")
@common_options
@click.argument("queue_name", metavar="[QUEUE]", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def stats(ctx: click.Context, queue_name: str | None, as_json: bool) -> None:
    """Per message queue: messages, visible now, invisible (delayed: never read; held: read, its
    vt ahead), the oldest message's age, the archive's size, messages ever sent, and the settings
    that are set. Subscription queues show their topic's backlog per subscriber."""
    queues = _open(ctx)
    found = [_one(queues, queue_name)] if queue_name is not None else queue_figures(queues.backend)
    if as_json:
        print_json([f.as_dict() for f in found])
        return
    if not found:
        click.echo("no message queues")
        return
    print_mq_table(found)


def print_mq_table(found: list[MessageQueueFigures]) -> None:
    """The table `mq stats` and `batchq stats` print."""
    click.echo(
        f"{'message queue':<24} {'messages':>8} {'visible':>8} {'delayed':>8} {'held':>8} {'oldest':>8} "
        f"{'archived':>8} {'sent':>8}  settings"
    )
    for f in found:
        oldest = "-" if f.oldest_age_seconds is None else format_duration(f.oldest_age_seconds)
        settings = ", ".join(f"{k} {_shown(str(v))}" for k, v in f.settings().items())
        if f.subscription is not None:
            settings = ", ".join(filter(None, [f"subscriber of {_shown(f.subscription.topic)}", settings]))
        click.echo(
            f"{_shown(f.queue):<24} {f.messages:>8} {f.visible:>8} {f.delayed:>8} {f.held:>8} {oldest:>8} "
            f"{f.archived:>8} {f.sent:>8}  {settings or '-'}"
        )


@mq.command("peek")
@common_options
@click.argument("queue_name", metavar="QUEUE")
@click.argument("msg_id", metavar="[MSG_ID]", type=click.IntRange(*MSG_ID_RANGE), required=False)
@click.option(
    "--after", type=click.IntRange(0, MSG_ID_RANGE[1]), default=0, help="List the messages after this id."
)
@click.option("--limit", type=click.IntRange(1, PAGE_MAX), default=PAGE_SIZE, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def peek_(
    ctx: click.Context, queue_name: str, msg_id: int | None, after: int, limit: int, as_json: bool
) -> None:
    """Show message MSG_ID of QUEUE in full, or list QUEUE's messages (id order, from --after),
    without reading them: read_ct and vt stay as they are, no consumer is kept from them."""
    queues = _open(ctx)
    name = _one(queues, queue_name).queue
    if msg_id is not None:
        message = peek(queues.backend, name, msg_id)
        if message is None:
            fail(f"message {msg_id} is not in queue {_shown(name)!r} (deleted, archived, or never there)")
        if as_json:
            print_json(message.as_dict())
            return
        for key, value in _facts(message):
            click.echo(f"{key:<12} {value}")
        return
    page = message_page(queues.backend, name, after=after, limit=limit)
    if as_json:
        print_json([m.as_dict() for m in page])
        return
    if not page:
        click.echo(f"no messages in queue {_shown(name)}" + (f" after id {after}" if after else ""))
        return
    click.echo(f"{'id':>10} {'state':<8} {'reads':>5} {'enqueued (UTC)':<19}  message")
    for m in page:
        enqueued = format_time(m.enqueued_at).removesuffix(" UTC")
        click.echo(f"{m.msg_id:>10} {m.state:<8} {m.read_ct!s:>5} {enqueued:<19}  {_cut(m.message)}")
    if len(page) == limit:
        click.echo(f"more: batchq mq peek {_shown(name)} --after {page[-1].msg_id}")


SHOWN_CHARS = 70


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _cut(value: Any) -> str:
    text = _shown(_text(value))
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _facts(m: PeekedMessage) -> list[tuple[str, str]]:
    vt = format_time(m.vt)
    if m.vt_in_seconds is not None and m.vt_in_seconds > 0:
        vt += f" (in {format_duration(m.vt_in_seconds)})"
    return [
        ("msg_id", str(m.msg_id)),
        ("state", m.state),
        ("read_ct", str(m.read_ct)),
        ("enqueued_at", format_time(m.enqueued_at)),
        ("vt", vt),
        ("headers", _shown(_text(m.headers))),
        ("message", _shown(_text(m.message))),
    ]


@mq.command("archive")
@common_options
@click.argument("queue_name", metavar="QUEUE")
@click.argument("msg_id", metavar="MSG_ID", type=click.IntRange(*MSG_ID_RANGE))
@click.pass_context
def archive(ctx: click.Context, queue_name: str, msg_id: int) -> None:
    """Move message MSG_ID of QUEUE to its archive (held by a consumer or not); exit 1 if it is
    not there."""
    queues = _open(ctx)
    name = _one(queues, queue_name).queue
    if not queues.archive(name, msg_id):
        fail(f"message {msg_id} is not in queue {_shown(name)!r}: nothing archived")
    click.echo(f"archived message {msg_id} of queue {_shown(name)}")


@mq.command("delete")
@common_options
@click.argument("queue_name", metavar="QUEUE")
@click.argument("msg_id", metavar="MSG_ID", type=click.IntRange(*MSG_ID_RANGE))
@click.pass_context
def delete(ctx: click.Context, queue_name: str, msg_id: int) -> None:
    """Delete message MSG_ID of QUEUE (held by a consumer or not; not archived); exit 1 if it is
    not there."""
    queues = _open(ctx)
    name = _one(queues, queue_name).queue
    if not queues.delete(name, msg_id):
        fail(f"message {msg_id} is not in queue {_shown(name)!r}: nothing deleted")
    click.echo(f"deleted message {msg_id} of queue {_shown(name)}")


@mq.command("purge")
@common_options
@click.argument("queue_name", metavar="QUEUE")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def purge(ctx: click.Context, queue_name: str, yes: bool) -> None:
    """Delete every message of QUEUE, held or not (its archive stays): those there when it counts
    them, not those sent meanwhile. Asks first, stating how many; with no terminal, --yes is
    needed."""
    if not yes and not _terminal():
        usage_error("mq purge asks for confirmation: add --yes when there is no terminal")
    queues = _open(ctx)
    found = _one(queues, queue_name)
    if found.messages == 0:
        click.echo(f"queue {_shown(found.queue)} has no messages: nothing deleted")
        return
    if not yes:
        click.confirm(
            f"Delete the {counted(found.messages, 'message')} of message queue {_shown(found.queue)!r} "
            f"({found.held} held by consumers)?",
            abort=True,
        )
    deleted = purge_up_to(queues.backend, found.queue, found.max_id)  # not those sent since
    click.echo(f"deleted {counted(deleted, 'message')} of queue {_shown(found.queue)}")


def _terminal() -> bool:
    """Whether someone can answer the confirmation (cron has no terminal)."""
    return sys.stdin.isatty()


@mq.command("configure")
@common_options
@click.argument("queue_name", metavar="QUEUE")
@max_length_option
@overflow_option
@schema_option
@force_option
@json_option
@click.pass_context
def configure(
    ctx: click.Context,
    queue_name: str,
    max_length: str | None,
    overflow: str | None,
    schema: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """Show a message queue's settings (max_length and overflow, type, durability, subscription),
    or set those given (quietly, but for what a change did to the messages; --json prints the
    settings after). Durability is fixed when the queue is created."""
    bound = check_bound_options(max_length, overflow)
    new_schema = read_schema(schema) if schema is not None else None
    if force and schema is None:
        raise ConfigError("--force goes with --schema: it changes a type despite waiting messages")
    queues = _open(ctx)
    before = _one(queues, queue_name)
    name = before.queue
    notes = []
    if bound is not NOT_GIVEN:
        policy = kept_overflow(bound, overflow, before.overflow)
        dropped = queues.configure_queue(name, max_length=bound, overflow=policy)  # type: ignore[arg-type]
        if dropped:
            notes.append(f"{counted(dropped, 'message')} archived to fit the new bound (drop_oldest)")
    if schema is not None:
        mismatched = queues.alter_queue(name, schema=new_schema, force=force)
        if mismatched:
            notes.append(f"{counted(mismatched, 'message')} do not match the new type (forced)")
    changed = bound is not NOT_GIVEN or schema is not None
    f = _one(queues, name)
    if as_json:
        print_json({**_listed(f), "notes": notes})
        return
    for note in notes:
        click.echo(note)
    if changed:
        return  # quiet when it did what it was told (-v or no option shows the settings)
    print_settings(
        f"message queue {_shown(name)}",
        [
            ("max_length", OFF if f.max_length is None else str(f.max_length)),
            ("overflow", f.overflow or "-"),
            ("type", describe_type(f.type_name)),
            ("durable", "yes" if f.durable else "no (PostgreSQL UNLOGGED)"),
            ("subscription", _subscription(f)),
        ],
    )


# -- pop several; topic routing by pattern (PGMQ's bind_topic) ------------------------------


@mq.command("pop")
@common_options
@click.argument("queue_name", metavar="QUEUE")
@click.option(
    "--qty", type=click.IntRange(1, MAX_QTY), default=1, show_default=True, help="At most this many."
)
@click.pass_context
def pop(ctx: click.Context, queue_name: str, qty: int) -> None:
    """Take up to --qty visible messages of QUEUE, oldest first, and delete them (no archive):
    each is printed as one JSON line, so that they can be handled by hand or sent elsewhere.
    Messages held by consumers stay."""
    queues = _open(ctx)
    name = _one(queues, queue_name).queue
    for m in queues.pop(name, qty):
        click.echo(json.dumps(_popped(m), default=str, ensure_ascii=False))


def _popped(m: Message) -> dict[str, Any]:
    return {
        "msg_id": m.msg_id,
        "read_ct": m.read_ct,
        "enqueued_at": m.enqueued_at,
        "headers": m.headers,
        "message": m.message,
    }


@mq.command("bind")
@common_options
@click.argument("pattern", metavar="PATTERN")
@click.argument("queue_name", metavar="QUEUE")
@click.pass_context
def bind(ctx: click.Context, pattern: str, queue_name: str) -> None:
    """Route to QUEUE the messages sent with send_topic() under a routing key PATTERN matches:
    dot-separated words, '*' for exactly one word, '#' for any run ('orders.*', 'logs.#', '#').
    Binding twice changes nothing."""
    check_pattern(pattern)  # before the queue is looked for: a bad pattern is a mistake (exit 2)
    queues = _open(ctx)
    name = _one(queues, queue_name).queue
    if queues.bind_topic(pattern, name):
        click.echo(f"bound {_shown(pattern)} to queue {_shown(name)}")
    else:
        click.echo(f"{_shown(pattern)} was bound to queue {_shown(name)} already")


@mq.command("unbind")
@common_options
@click.argument("pattern", metavar="PATTERN")
@click.argument("queue_name", metavar="QUEUE")
@click.pass_context
def unbind(ctx: click.Context, pattern: str, queue_name: str) -> None:
    """Remove the binding of PATTERN to QUEUE; exit 1 if there is none."""
    if not _open(ctx).unbind_topic(pattern, queue_name):
        fail(
            f"{_shown(pattern)} is not bound to queue {_shown(queue_name)!r}: `batchq mq bindings` lists them"
        )
    click.echo(f"unbound {_shown(pattern)} from queue {_shown(queue_name)}")


@mq.command("bindings")
@common_options
@click.option("--queue", "queue_name", default=None, metavar="QUEUE", help="Only this queue's bindings.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def bindings(ctx: click.Context, queue_name: str | None, as_json: bool) -> None:
    """Every binding of a topic pattern to a message queue, by pattern."""
    _print_bindings(_open(ctx).list_topic_bindings(queue_name), as_json, "no topic bindings")


@mq.command("route")
@common_options
@click.argument("routing_key", metavar="ROUTING_KEY")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def route(ctx: click.Context, routing_key: str, as_json: bool) -> None:
    """Show where a message sent with ROUTING_KEY would go (the bindings whose pattern matches it),
    sending nothing."""
    check_routing_key(routing_key)
    found = _open(ctx).test_routing(routing_key)
    _print_bindings(
        found, as_json, f"no binding matches {_shown(routing_key)}: a message sent with it goes nowhere"
    )


def _print_bindings(found: list[TopicBinding], as_json: bool, none: str) -> None:
    if as_json:
        print_json([{"pattern": b.pattern, "queue": b.queue, "created_at": b.created_at} for b in found])
        return
    if not found:
        click.echo(none)
        return
    click.echo(f"{'pattern':<32} {'queue':<24} created (UTC)")
    for b in found:
        created = format_time(b.created_at).removesuffix(" UTC")
        click.echo(f"{_shown(b.pattern):<32} {_shown(b.queue):<24} {created}")
