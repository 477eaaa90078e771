"""`batchq consume`: run the @batchq.subscriber handlers on their subscriptions' messages."""

from __future__ import annotations

import logging

import click

from ..core.config import counted
from ..jobs.tasks import TASK_MODULES_ENV, Resolver, modules_from_env, split_modules
from ..jobs.timeouts import DEFAULT_GRACE_SECONDS, WATCHDOG_EXIT_STATUS
from .common import DURATION, common_options, existing_only, timeout_value


@click.command()
@common_options
@click.option(
    "--topic", "topics", multiple=True, metavar="T", help="Only the handlers of this topic (repeat)."
)
@click.option(
    "--subscriber",
    "subscribers",
    multiple=True,
    metavar="S",
    help="Only the handlers of this subscriber (repeat).",
)
@click.option(
    "--max-messages",
    type=click.IntRange(min=1),
    help="Exit after this many messages taken: handler calls (a retried message counts each time) "
    "and messages archived unread.",
)
@click.option(
    "--max-seconds", type=DURATION, help="Exit after this long (the message at hand finishes; see --timeout)."
)
@click.option(
    "--timeout",
    metavar="DURATION",
    callback=timeout_value,
    help="Stop a handler's call that runs longer and count it as an error (for handlers whose "
    "@subscriber(timeout=...) is unset). Default: none.",
)
@click.option(
    "--timeout-grace",
    metavar="DURATION",
    callback=timeout_value,
    help=f"After a call's timeout, how long it may take to stop; then the consumer ends itself "
    f"with exit status {WATCHDOG_EXIT_STATUS}. [default: {DEFAULT_GRACE_SECONDS:g}s]",
)
@click.option(
    "--wait",
    type=DURATION,
    help="Exit once no message has come for this long (0: drain, then exit). Default: never.",
)
@click.option(
    "--poll-interval",
    type=DURATION,
    default=1.0,
    show_default=True,
    help="How often an idle consumer looks for messages (PostgreSQL is also woken by each publish).",
)
@click.option(
    "--task-modules",
    envvar=TASK_MODULES_ENV,
    show_envvar=True,
    metavar="M1,M2",
    help="Modules to import for their handlers, by exact name; 'pkg.*' for every submodule of pkg.",
)
@click.pass_context
def consume(
    ctx: click.Context,
    topics: tuple[str, ...],
    subscribers: tuple[str, ...],
    max_messages: int | None,
    max_seconds: float | None,
    timeout: float | None,
    timeout_grace: float | None,
    wait: float | None,
    poll_interval: float,
    task_modules: str | None,
) -> None:
    """Call the handlers registered with @batchq.subscriber with their subscriptions' messages,
    under each subscription's policy (at_least_once or at_most_once); subscribe those that are
    not yet. Runs until SIGTERM (which finishes the message at hand, then exits 0) or a limit.
    A handler's call that would not stop within its timeout's grace period ends the process
    with exit status 4."""
    from ..mq import MessageQueue
    from ..mq.pubsub import load_handlers
    from ..runtime.consumer import ConsumeOptions, Consumer

    resolver = Resolver(modules_from_env() if task_modules is None else split_modules(task_modules))
    handlers, import_failures = load_handlers(resolver, topics, subscribers)
    for failure in import_failures:
        logging.getLogger("batchq").warning("could not import %s", failure)
    mq = MessageQueue(ctx.obj["url"])
    existing_only(mq)
    ctx.call_on_close(mq.close)
    options = ConsumeOptions(
        max_messages=max_messages,
        max_seconds=max_seconds,
        timeout=timeout,
        timeout_grace=DEFAULT_GRACE_SECONDS if timeout_grace is None else timeout_grace,
        wait=wait,
        poll_interval=max(poll_interval, 0.001),
    )
    summary = Consumer(mq, handlers, options).run()
    logging.getLogger("batchq").info(
        "%s (%d ok, %d failed); %s done: %d handled, %d archived, %d dropped; %s",
        counted(summary.calls, "handler call"),
        summary.handled,
        summary.failed,
        counted(summary.finished, "message"),
        summary.handled,
        summary.archived,
        summary.dropped,
        counted(summary.reconnects, "reconnect"),
    )
