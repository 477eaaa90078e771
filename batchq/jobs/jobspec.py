"""One way to build a job: its options as one checked value (JobSpec), its row from that value.

``Queue.enqueue``, ``enqueue_many``, ``enqueue_on_commit``, schedules and ``testing.inline`` all
build their jobs here, so a job is checked the same way (same errors, same order) wherever it
comes from. ``JobSpec.of`` checks the options once and resolves the task (its policy: max_errors,
keep_result; its version); ``JobBuilder`` adds what only the database knows (the partition count,
the queue's payload type, the payload size limit) and serialises payloads.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any, NamedTuple, Protocol

from ..backends import Backend
from ..coordination.partitions import COUNT_CACHE_SECONDS, partition_count
from ..core.config import (
    Duration,
    aware_epoch,
    check_queue_name,
    counted,
    format_duration,
    parse_duration,
    parse_timeout,
    parse_when,
)
from ..core.serializers import dumps, numbered, which_of
from ..errors import ConfigError, PayloadError
from ..policy.flow import Rate, parse_rate
from ..policy.typed import QueueType, TypeCache, refuse_pickle
from .tasks import (
    Resolver,
    checked_task_version,
    keep_result_seconds,
    task_expires,
    task_keep_result,
    task_policy,
)

Task = str | Callable[..., Any]
Delay = Duration | None
PRIORITY_RANGE = (-32768, 32767)
MAX_ERRORS_RANGE = (1, 65535)
DEFAULT_MAX_ERRORS = 10
CONCURRENCY_LIMIT_RANGE = (1, 65535)
CONCURRENCY_KEY_MAX_CHARS = 255
UNIQUE_KEY_MAX_CHARS = 255
RATE_KEY_MAX_CHARS = 255
TRACE_CONTEXT_MAX_CHARS = 512  # the trace_context column (migration 027)
# Checked specs (and their templates) a builder keeps for options that repeat, as a producer's
# do: JobSpec.of and the template were 46,000 of enqueue()'s 243,000 client instructions per call
# (callgrind, PostgreSQL). Past this many distinct ones, a builder starts over.
KEPT_SPECS = 256
# JobSpec.of's options: enqueue's keywords but unique_key (per row) and conn (where it is written).
OPTIONS = (
    "queue",
    "delay",
    "priority",
    "max_errors",
    "serializer",
    "concurrency_key",
    "concurrency_limit",
    "timeout",
    "backoff",
    "keep_result",
    "run_at",
    "expires",
    "rate_key",
    "rate",
)
EXPIRES = OPTIONS.index("expires")


class JobSpec(NamedTuple):
    """A job but its payload, checked: the task as rows name it and every option as stored
    (seconds, not durations; the task's own max_errors and keep_result filled in). Built by
    ``JobSpec.of``; ``template`` gives the row. A NamedTuple: immutable, and built in about half
    the time of a frozen dataclass, on the path of every enqueue."""

    queue: str
    task: str
    serializer: str
    priority: int
    max_errors: int
    delay: float  # seconds from now
    at: float | None  # an instant (Unix seconds) given as an aware datetime; the later one counts
    concurrency_key: str | None
    concurrency_limit: int | None
    timeout: float | None
    task_version: int
    backoff: float | None  # NULL: the task's, else the worker's
    keep_result: float | None  # NULL keeps nothing (batchq.jobs.results)
    expires: float | None  # seconds from now (the server's clock) after which it never starts
    expires_at: float | None  # or that instant (Unix seconds), given as an aware datetime
    # The W3C trace context an enqueue middleware set (batchq.jobs.hooks): None for most jobs.
    trace_context: str | None = None
    # A per-key rate (batchq.policy.flow): at most rate_limit jobs of the key start in any
    # rate_period seconds. None for most jobs.
    rate_key: str | None = None
    rate_limit: int | None = None
    rate_period: float | None = None

    @classmethod
    def of(
        cls,
        resolver: Resolver,
        task: Task,
        *,
        queue: str = "default",
        delay: Delay | datetime = None,
        priority: int = 0,
        max_errors: int | None = None,
        serializer: str = "json",
        concurrency_key: str | None = None,
        concurrency_limit: int | None = None,
        timeout: Delay = None,
        backoff: Delay = None,
        keep_result: bool | Duration | None = None,
        run_at: datetime | None = None,
        expires: Duration | datetime | None = None,
        rate_key: str | None = None,
        rate: str | Rate | None = None,
    ) -> JobSpec:
        """The options of enqueue, checked (ConfigError/TaskError naming the problem): the task
        must resolve under ``resolver``'s allow-list. The task's version is taken as it is now."""
        check_queue_name(queue)
        name, func = resolver.task_for(task)
        if max_errors is None:  # the task's own (@task(max_errors=...)), else the default
            max_errors = task_policy(func)[0] or DEFAULT_MAX_ERRORS
        check_int("priority", priority, PRIORITY_RANGE)
        check_int("max_errors", max_errors, MAX_ERRORS_RANGE)
        seconds, at = run_time(delay, run_at)
        if expires is None:  # the task's own (@task(expires=...)), a duration
            expires = task_expires(func)
        expiry = check_expiry(expires, seconds, at)
        limit = check_concurrency(concurrency_key, concurrency_limit)
        key_rate = check_key_rate(rate_key, rate)
        timeout_seconds = parse_timeout(timeout, "timeout")
        backoff_seconds = None if backoff is None else parse_duration(backoff, "backoff")
        keep_seconds = task_keep_result(func) if keep_result is None else keep_result_seconds(keep_result)
        return cls(
            queue,
            name,
            serializer,
            priority,
            max_errors,
            seconds,
            at,
            concurrency_key,
            limit,
            timeout_seconds,
            checked_task_version(func, name),
            backoff_seconds,
            keep_seconds,
            *expiry,
            rate_key=rate_key,
            rate_limit=None if key_rate is None else key_rate.limit,
            rate_period=None if key_rate is None else key_rate.period,
        )

    def template(self, partitions: int) -> dict[str, Any]:
        """Everything of its job row but the payload (and no unique key), for ``partitions``
        partitions (batchq.coordination.partitions; 1 when none)."""
        return {
            "queue": self.queue,
            "task": self.task,
            "serializer": self.serializer,
            "priority": self.priority,
            "max_errors": self.max_errors,
            "delay": self.delay,
            "at": self.at,
            "concurrency_key": self.concurrency_key,
            "concurrency_limit": self.concurrency_limit,
            "unique_key": None,
            "timeout": self.timeout,
            "task_version": self.task_version,
            "backoff": self.backoff,
            "keep_result": self.keep_result,
            "expires": self.expires,
            "expires_at": self.expires_at,
            "trace_context": self.trace_context,
            "rate_key": self.rate_key,
            "rate_limit": self.rate_limit,
            "rate_period": self.rate_period,
            "partitions": partitions,
        }


class Connected(Protocol):
    """What holds the builder's database (a Queue): its ``backend`` is this thread's connection,
    or, under batchq.aio, the one lent to the call at hand (which replaces the Queue's database)."""

    @property
    def backend(self) -> Backend: ...


class JobBuilder:
    """Job rows of one database: a JobSpec's template with the partition count (read at most
    once a minute) and payloads serialised and checked against the queue's type (read at most
    once a second) and the database's size limit. One per Queue; schedules use their queue's."""

    def __init__(self, owner: Connected, resolver: Resolver, secret: bytes | None, types: TypeCache) -> None:
        self.owner = owner
        self.secret = secret
        self.types = types
        self._partitions_known: tuple[float, int] | None = None  # (valid until, count)
        # (task, options, their types): (the checked spec, the task's function, its attributes)
        self._specs: dict[tuple[Any, ...], tuple[JobSpec, Any, dict[str, Any]]] = {}
        self._templates: dict[JobSpec, tuple[int, dict[str, Any]]] = {}  # (partitions, template)
        self.resolver = resolver

    @property
    def resolver(self) -> Resolver:
        return self._resolver

    @resolver.setter
    def resolver(self, value: Resolver) -> None:
        """Another allow-list: what was checked under the last one is checked again."""
        self._resolver = value
        self._specs.clear()

    @property
    def backend(self) -> Backend:
        """The owner's connection, opened on first use (never when the builder is made)."""
        return self.owner.backend

    def spec(self, task: Task, **options: Any) -> JobSpec:
        """``JobSpec.of`` under this queue's allow-list."""
        return JobSpec.of(self.resolver, task, **options)

    def kept_spec(self, task: Task, *options: Any) -> JobSpec:
        """``spec`` with enqueue's options given in OPTIONS' order, positionally (enqueue's hot
        path: no repacking), kept while they repeat: the same values of the same types (a
        keep_result of True is a day, of 1 a second), under the same allow-list, while the
        task's attributes (its @task version and policy) stay as they were. An expiry given as an
        instant is never kept: whether it is still ahead is the clock's to say each time."""
        key: tuple[Any, ...] | None = (task, options, tuple(map(type, options)))
        try:
            kept = self._specs.get(key)  # type: ignore[arg-type]
        except TypeError:  # an unhashable option: JobSpec.of says what is wrong with it
            key, kept = None, None
        if kept is not None and _attributes(kept[1]) == kept[2]:
            return kept[0]
        spec = JobSpec.of(self.resolver, task, **dict(zip(OPTIONS, options)))
        if key is not None and not isinstance(options[EXPIRES], datetime):
            func = self.resolver.task_for(task)[1]  # resolved already: a look-up
            _keep(self._specs, key, (spec, func, dict(_attributes(func))))
        return spec

    def template(self, spec: JobSpec, conn: Any = None) -> dict[str, Any]:
        """The spec's row but its payload, shared while the spec and the partition count stay
        (change a copy, never it); reads (on ``conn`` when given) the partition count and the
        queue's type when they are due, for ``payloads`` to check against."""
        partitions = self.partitions(conn)
        known = self._templates.get(spec)
        if known is None or known[0] != partitions:
            known = (partitions, spec.template(partitions))
            _keep(self._templates, spec, known)
        self.payload_type(spec.queue, conn)
        return known[1]

    def payload_type(self, queue: str, conn: Any = None) -> QueueType:
        """A job queue's type as this process knows it, read again when over a second old."""
        known = self.types.fresh(queue)
        if known is None:
            known = self.types.learn(queue, self.backend.stores.jobs.queue_schema(queue, conn))
        return known

    def partitions(self, conn: Any = None) -> int:
        """How many partitions new jobs are spread over (batchq.coordination.partitions; 1 when none are set
        up), read at most once a minute: on ``conn`` when given, so that enqueue(conn=...) needs
        no connection of its own."""
        known, now = self._partitions_known, time.monotonic()
        if known is None or now >= known[0]:
            count = max(partition_count(self.backend, conn), 1)
            known = self._partitions_known = (now + COUNT_CACHE_SECONDS, count)
        return known[1]

    def forget_partitions(self) -> None:
        self._partitions_known = None

    def row(self, template: dict[str, Any], payload: Any) -> dict[str, Any]:
        """A job row of the template; on a typed queue (as ``template`` read it), the payload
        must match the type (PayloadInvalid) and be JSON."""
        return {**template, "payload": self.payloads(template, (payload,))[0]}

    def payloads(self, template: dict[str, Any], payloads: Iterable[Any]) -> list[bytes | None]:
        """The payloads as stored, each checked (size; the queue's type) before anything is
        written; a payload of many that does not match says which it is. What is the same for
        every payload (the type, the size limit) is looked up once per call, not per row."""
        queue, serializer, secret = template["queue"], template["serializer"], self.secret
        known = self.types.get(queue)
        if known is not None and known.text is not None:
            refuse_pickle(serializer, queue)
        else:
            known = None  # untyped: nothing to check a payload against
        limit = self.backend.payload_limit()
        stored: list[bytes | None] = []
        given = payloads if isinstance(payloads, (list, tuple)) else list(payloads)
        count = len(given)  # a batch's errors say which payload: "job 2 of 3"
        for index, payload in enumerate(given):
            try:
                data = dumps(payload, serializer, secret)
                if data is not None and len(data) > limit:
                    raise too_big(len(data), limit)
            except PayloadError as exc:
                raise numbered(exc, "job", index, count) from None
            if known is not None:
                where = "payload" if count == 1 else which_of("job", index, count)
                known.check(data, f"{where} does not match the type of queue {queue!r}: ")
            stored.append(data)
        return stored


def _attributes(func: Any) -> dict[str, Any]:
    """What @task set on a task's function (its version, its policy), as JobSpec.of read it."""
    return getattr(func, "__dict__", None) or {}


def _keep(kept: dict[Any, Any], key: Any, value: Any) -> None:
    """One more entry in a builder's bounded memory; full, it starts over."""
    if len(kept) >= KEPT_SPECS:
        kept.clear()
    kept[key] = value


def run_time(delay: Delay | datetime, run_at: datetime | None) -> tuple[float, float | None]:
    """When a job is due, as (seconds from now, instant or None): ``delay`` as a message's (an
    aware datetime is that instant), or ``run_at``, an aware datetime, the same way; not both."""
    if run_at is None:
        return parse_when(delay, "delay")
    if delay is not None:
        raise ConfigError("give delay or run_at, not both: run_at is the instant, delay the wait before it")
    return 0.0, aware_epoch(run_at, "run_at")


def check_expiry(
    expires: Duration | datetime | None, delay: float, at: float | None
) -> tuple[float | None, float | None]:
    """An expiry as stored, (seconds from now, None) or (None, instant), (None, None) for none:
    a duration counts from the enqueue on the server's clock, an aware datetime is that instant.
    It must come after the job is due, or the job could never start."""
    if expires is None:
        return None, None
    if isinstance(expires, datetime):
        instant = aware_epoch(expires, "expires")
        assert instant is not None
        due = max(time.time() + delay, at if at is not None else -math.inf)
        if instant <= due:
            raise ConfigError(
                f"bad expires {expires.isoformat()}: it is not after the job is due "
                f"({_instant(due)}): the job could never start; give a later expiry"
            )
        return None, instant
    seconds = parse_duration(expires, "expires")
    if seconds <= 0:
        raise ConfigError(f"bad expires {expires!r}: a job must be allowed more than 0 s to start")
    due_in = max(delay, (at - time.time()) if at is not None else 0.0)
    if seconds <= due_in:
        raise ConfigError(
            f"bad expires {expires!r}: it is not after the job is due (in {format_duration(due_in)}): "
            "the job could never start; give a longer expiry"
        )
    return seconds, None


def _instant(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")


def check_int(name: str, value: Any, bounds: tuple[int, int]) -> None:
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"bad {name} {value!r}: use a whole number from {low} to {high}")


def check_concurrency(key: str | None, limit: int | None) -> int | None:
    """The limit to store (1 when a key comes without one); raises on a bad key or limit."""
    if key is None:
        if limit is not None:
            raise ConfigError("concurrency_limit needs a concurrency_key: pass the key the limit is for")
        return None
    check_key("concurrency_key", key, CONCURRENCY_KEY_MAX_CHARS, "customer:42")
    limit = 1 if limit is None else limit
    check_int("concurrency_limit", limit, CONCURRENCY_LIMIT_RANGE)
    return limit


def check_key_rate(key: Any, rate: Any) -> Rate | None:
    """A per-key rate: both or neither of rate_key and rate (batchq.policy.flow)."""
    if key is None and rate is None:
        return None
    if rate is None:
        raise ConfigError(
            "rate_key needs a rate: pass rate='100/m' (at most 100 jobs of the key start a minute)"
        )
    if key is None:
        raise ConfigError(
            "rate needs a rate_key: the jobs that share the rate (for a whole queue's rate, "
            "Queue.configure(queue, rate=...))"
        )
    check_key("rate_key", key, RATE_KEY_MAX_CHARS, "api:stripe")
    return parse_rate(rate)


def check_key(name: str, key: Any, max_chars: int, example: str) -> str:
    """A key (concurrency or unique) as stored: text of 1-max_chars characters, no NUL, UTF-8."""
    if not isinstance(key, str) or not 0 < len(key) <= max_chars or "\x00" in key:
        raise ConfigError(
            f"bad {name} {key!r}: use a string of 1-{max_chars} characters without NUL, such as {example!r}"
        )
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"bad {name} {key!r}: it is not valid UTF-8 text") from None
    return key


def check_trace_context(value: Any) -> str | None:
    """A trace context as stored: None, or printable ASCII (what W3C traceparent and tracestate
    headers are made of) of 1-TRACE_CONTEXT_MAX_CHARS characters. Set by a middleware, not a
    user: a bad one is that middleware's bug, refused before anything is written."""
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= TRACE_CONTEXT_MAX_CHARS
        or not value.isascii()
        or not value.isprintable()
    ):
        raise ConfigError(
            f"bad trace_context {value!r:.80}: use printable ASCII of 1-{TRACE_CONTEXT_MAX_CHARS} "
            "characters, such as a W3C traceparent ('00-<trace id>-<span id>-01')"
        )
    return value


def check_unique_key(key: Any) -> str:
    return check_key("unique_key", key, UNIQUE_KEY_MAX_CHARS, "invoice:42")


def set_unique_keys(rows: list[dict[str, Any]], keys: list[str | None]) -> None:
    """enqueue_many's unique_keys: one per payload, each checked before anything is written."""
    if len(keys) != len(rows):
        raise ConfigError(
            f"unique_keys has {counted(len(keys), 'key')} for {counted(len(rows), 'payload')}: "
            "give one key (or None) per payload"
        )
    for row, key in zip(rows, keys):
        row["unique_key"] = None if key is None else check_unique_key(key)


def too_big(size: int, limit: int) -> PayloadError:
    """The column's limit; MySQL also measures the statement as sent (max_allowed_packet)."""
    return PayloadError(
        f"payload is {size:,} bytes, more than this database accepts "
        f"({limit:,} bytes): store large data elsewhere and enqueue a reference to it"
    )
