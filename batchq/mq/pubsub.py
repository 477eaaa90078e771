"""The handlers `batchq consume` runs for the subscriptions of topics (batchq.mq.topics).

``subscribe("orders", "billing")`` gives the subscriber a message queue of its own, named
``orders:billing``; ``publish("orders", msg)`` puts one copy of the message into the queue of
every subscription of the topic at that moment, in one INSERT ... SELECT inside the publisher's
transaction: a rollback delivers nothing, a commit delivers to all. From then on each copy is
an ordinary message of its queue (read, delete, archive, metrics), so subscribers never hold
each other back.

A topic's shard rows (batchq_mq_topic) order publishes against subscribe and unsubscribe: a
publish locks one shard (picked at random, so concurrent publishers rarely meet) and the
others lock every shard. So a subscription sees exactly the publishes that commit after it,
and an unsubscribe never leaves a copy behind in a queue it dropped.

Handlers: ``@batchq.subscriber("orders", "billing")`` registers a function for one
subscription; `batchq consume` imports the modules of BATCHQ_TASK_MODULES (the workers' list,
nothing else) and calls the handler with each message, under the subscription's policy
(batchq.runtime.consumer).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core.config import Duration, parse_timeout
from ..errors import ConfigError, TaskError
from ..jobs.tasks import TASK_MODULES_ENV, Resolver, not_plain, task_path
from .topics import (
    AT_LEAST_ONCE,
    AT_MOST_ONCE,
    DEFAULT_MAX_TRIES,
    DEFAULT_POLICY,
    DEFAULT_VT_SECONDS,
    MAX_TRIES_RANGE,
    POLICIES,
    TOPIC_SHARDS,
    Failure,
    Subscription,
    archive_failed,
    check_max_tries,
    check_name,
    check_policy,
    check_vt,
    failures,
    publish,
    subscribe,
    subscription_queue,
    subscriptions,
    unsubscribe,
)

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("batchq.runtime.consumer")


@dataclass(frozen=True)
class Handler:
    topic: str
    subscriber: str
    func: Callable[..., Any]
    pass_message: bool  # call it with the Message (id, read_ct, headers...) rather than its body
    # The subscription's settings as the decorator states them; None: as stored (or the default).
    policy: str | None
    max_tries: int | None
    vt: float | None
    timeout: float | None = None  # how long one call may run; None: `consume --timeout`'s


# (topic, subscriber) -> its handler, filled by @subscriber as handler modules are imported.
_handlers: dict[tuple[str, str], Handler] = {}


# -- handlers ---------------------------------------------------------------------------


def subscriber(
    topic: str,
    name: str,
    *,
    policy: str | None = None,
    max_tries: int | None = None,
    vt: Duration | None = None,
    pass_message: bool = False,
    timeout: Duration | None = None,
) -> Callable[[F], F]:
    """Register a function as the handler of subscription (``topic``, ``name``).

    `batchq consume` subscribes it if it is not yet (it then sees the messages published from
    that moment on) and calls it with each message's body, or with the
    :class:`~batchq.mq.Message` when ``pass_message``. ``policy``, ``max_tries`` and ``vt``,
    when given, are written to the subscription as the consumer starts; when not, the stored
    ones apply (set with ``MessageQueue.subscribe``; by default at_least_once, 5 tries, 30s).
    ``timeout``: how long one call may run, as a job's (instead of `batchq consume --timeout`).
    """
    subscription_queue(topic, name)
    settings = (check_policy(policy), check_max_tries(max_tries), check_vt(vt))
    timeout_seconds = parse_timeout(timeout, "handler timeout")

    def register(fn: F) -> F:
        path = task_path(fn)  # module level only: a consumer finds it by importing its module
        if not_plain(fn):
            raise TaskError(
                f"handler {path} is a generator or async generator, whose body would never run "
                "when called: make it a plain function (or async def without yield)"
            )
        current = _handlers.get((topic, name))
        if current is not None and current.func is not fn and task_path(current.func) != path:
            raise TaskError(
                f"subscriber {name!r} of topic {topic!r} has a handler already, "
                f"{task_path(current.func)}; {path} needs a subscriber name of its own"
            )
        _handlers[(topic, name)] = Handler(topic, name, fn, pass_message, *settings, timeout_seconds)
        return fn

    return register


def load_handlers(
    resolver: Resolver, topics: Iterable[str] = (), subscribers: Iterable[str] = ()
) -> tuple[list[Handler], list[str]]:
    """The handlers of the allowed modules (imported here, as a worker imports them), of
    ``topics`` and ``subscribers`` when given; and the modules that failed to import."""
    if not resolver.allowed_modules:
        raise ConfigError(
            f"no handler modules: list the modules that define @batchq.subscriber handlers in "
            f"{TASK_MODULES_ENV} or --task-modules"
        )
    topic_set = {check_name(topic, "topic") for topic in topics}
    subscriber_set = {check_name(name, "subscriber") for name in subscribers}
    import_failures = resolver.import_allowed_modules()
    found = [
        handler
        for _, handler in sorted(_handlers.items())
        if (not topic_set or handler.topic in topic_set)
        and (not subscriber_set or handler.subscriber in subscriber_set)
    ]
    allowed = [handler for handler in found if _allowed(resolver, handler)]
    if not allowed:
        wanted = "" if not (topic_set or subscriber_set) else " for the topics and subscribers asked"
        failed = f" (these failed to import: {', '.join(import_failures)})" if import_failures else ""
        raise ConfigError(
            f"no @batchq.subscriber handler{wanted} in {', '.join(resolver.allowed_modules)}{failed}"
        )
    return allowed, import_failures


def _allowed(resolver: Resolver, handler: Handler) -> bool:
    """Only a handler defined in an allowed module runs: one registered by a module that an
    allowed module imported is left out, and said so."""
    module = getattr(handler.func, "__module__", None)
    if isinstance(module, str) and resolver.module_allowed(module):
        return True
    log.warning(
        "handler %s of %s/%s is not run: its module %r is not in %s",
        task_path(handler.func), handler.topic, handler.subscriber, module, TASK_MODULES_ENV,
    )  # fmt: skip
    return False


# The topics' names, from batchq.mq.topics, as this module has always offered them.
__all__ = [
    "AT_LEAST_ONCE",
    "AT_MOST_ONCE",
    "DEFAULT_MAX_TRIES",
    "DEFAULT_POLICY",
    "DEFAULT_VT_SECONDS",
    "MAX_TRIES_RANGE",
    "POLICIES",
    "TOPIC_SHARDS",
    "Failure",
    "Handler",
    "Subscription",
    "archive_failed",
    "check_max_tries",
    "check_name",
    "check_policy",
    "check_vt",
    "failures",
    "load_handlers",
    "publish",
    "subscribe",
    "subscriber",
    "subscription_queue",
    "subscriptions",
    "unsubscribe",
]
