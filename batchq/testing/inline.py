"""inline(): while the block runs, enqueue() runs the job at once in the caller's process instead of
writing it, as huey's immediate mode or Django's ImmediateBackend do.

Everything enqueue checks is checked first, with enqueue's own code (the task, the queue name,
the options, the payload: serialised and read back, so a payload JSON cannot carry fails as it
would in production, and the task gets what a worker would get); the task is then resolved under
the allow-list, as a worker resolves it. No row is written.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..core.serializers import loads
from ..errors import ConfigError
from ..jobs.calls import describe_error
from ..jobs.control import Snooze
from ..jobs.jobspec import OPTIONS, check_unique_key, set_unique_keys
from ..jobs.reporting import Tracker, tracking
from ..jobs.tasks import Resolver, call_task, modules_from_env, split_modules
from ..queue import Enqueued, Queue
from .outcomes import Outcome, Outcomes

ERRORS = ("raise", "record")
_ENQUEUE, _ENQUEUE_MANY = Queue.enqueue, Queue.enqueue_many  # their signatures, whatever patches them


class Inline:
    """An inline block: the outcomes of the jobs it ran, in order (``ran``)."""

    def __init__(self, task_modules: tuple[str, ...] | None, errors: str) -> None:
        self.ran = Outcomes()
        self.errors = errors
        self._task_modules = task_modules
        self._env_modules = modules_from_env()  # as a worker started now would have them
        self._resolvers: dict[tuple[str, ...], Resolver] = {}
        self._ids = itertools.count(1)

    def resolver_for(self, queue: Queue) -> Resolver:
        """The allow-list a worker would use: the block's, else the Queue's, else the env's."""
        modules = self._task_modules
        if modules is None:
            modules = queue.resolver.allowed_modules or self._env_modules
        if modules == queue.resolver.allowed_modules:
            return queue.resolver
        resolver = self._resolvers.get(modules)
        if resolver is None:
            resolver = self._resolvers[modules] = Resolver(modules)
        return resolver

    def run(self, queue: Queue, task: Any, payloads: list[Any], options: dict[str, Any]) -> int:
        """Check as enqueue does, then run one job per payload; returns the last job's number."""
        conn = options["conn"]  # what the app holds, as enqueue unwraps it (batchq.backends.appconn)
        conn = None if conn is None else queue.backend.app_connection(conn)
        spec = queue.builder.spec(task, **{name: options[name] for name in OPTIONS})
        template = queue.builder.template(spec, conn)
        stored = queue.builder.payloads(template, payloads)  # serialised, size and queue type checked
        job_id = 0
        for data in stored:
            job_id = next(self._ids)
            self._run_one(queue, job_id, template, data)
        return job_id

    def _run_one(self, queue: Queue, job_id: int, template: dict[str, Any], data: bytes | None) -> None:
        """As a worker runs a job: resolve the task under its allow-list, read the payload back,
        call; the outcome noted, and raised when errors="raise"."""
        queue_name, task_name = template["queue"], template["task"]
        tracker = Tracker(None)  # progress reports kept in memory only: no row
        try:
            func = self.resolver_for(queue).resolve(task_name)
            payload = loads(data, template["serializer"], queue.secret)  # the round trip
            with tracking(tracker):
                value = call_task(func, () if data is None else (payload,))
        except Snooze as snooze:  # no row to put back: noted, not run again
            self.ran.append(
                Outcome(
                    job_id,
                    queue_name,
                    task_name,
                    False,
                    exception=snooze,
                    snoozed_for=getattr(snooze, "seconds", 0.0),
                    progress=tuple(tracker.reports),
                )
            )
            return
        except BaseException as exc:
            error = describe_error(exc)
            reports = tuple(tracker.reports)
            self.ran.append(
                Outcome(job_id, queue_name, task_name, False, error=error, exception=exc, progress=reports)
            )
            if self.errors == "raise":
                raise
            return
        reports = tuple(tracker.reports)
        if value is False:
            outcome = Outcome(
                job_id, queue_name, task_name, False, error="the task returned False", progress=reports
            )
        else:
            outcome = Outcome(job_id, queue_name, task_name, True, value=value, progress=reports)
        self.ran.append(outcome)
        if self.errors == "raise":
            outcome.raise_error()


@contextmanager
def inline(
    q: Queue | None = None,
    /,
    *,
    errors: str = "raise",
    task_modules: str | Iterable[str] | None = None,
) -> Iterator[Inline]:
    """Run jobs at enqueue while the block runs: ``q``'s enqueues, or every Queue's (None).

    ``errors="raise"``: what the task raises comes out of enqueue() (a task returning False
    raises JobFailed); ``"record"``: enqueue returns as usual and the failure is in ``ran``.
    ``task_modules``: the allow-list the jobs are resolved under, as a worker's
    BATCHQ_TASK_MODULES (default: the enqueuing Queue's list, else BATCHQ_TASK_MODULES now).

    enqueue returns the job's number in the block (1, 2, ...): no row exists. Delays, priorities,
    unique and concurrency keys are checked and then have nothing to act on: the job runs now.
    A task that raises batchq.Snooze is noted in ``ran`` as snoozed (neither succeeded nor
    failed) and not run again; a Discard is a failure like any other.
    """
    if errors not in ERRORS:
        raise ConfigError(f"bad errors {errors!r}: use 'raise' or 'record'")
    modules = None if task_modules is None else split_modules(task_modules)
    block = Inline(modules, errors)
    one, many = inspect.signature(_ENQUEUE), inspect.signature(_ENQUEUE_MANY)

    def inline_enqueue(self: Queue, *args: Any, **kwargs: Any) -> Enqueued:
        bound = one.bind(self, *args, **kwargs)  # enqueue's own parameters, and defaults
        bound.apply_defaults()
        given = bound.arguments
        _check_unique_key(given.get("unique_key"))
        return Enqueued(block.run(self, given["task"], [given["payload"]], given))

    def inline_enqueue_many(self: Queue, *args: Any, **kwargs: Any) -> int:
        bound = many.bind(self, *args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        payloads = list(given["payloads"])
        keys = given.get("unique_keys")
        if keys is not None:
            keys = list(keys)
            set_unique_keys([{} for _ in payloads], keys)  # enqueue_many's checks, nothing kept
        if payloads:
            block.run(self, given["task"], payloads, given)
        return len(payloads)

    # On the class (every Queue) or on the one instance; what was there before comes back after,
    # so that blocks nest.
    owner: Any = Queue if q is None else q
    before = {name: vars(owner).get(name) for name in ("enqueue", "enqueue_many")}
    if q is None:
        Queue.enqueue, Queue.enqueue_many = inline_enqueue, inline_enqueue_many  # type: ignore[method-assign]
    else:
        q.enqueue = inline_enqueue.__get__(q)  # type: ignore[method-assign]
        q.enqueue_many = inline_enqueue_many.__get__(q)  # type: ignore[method-assign]
    try:
        yield block
    finally:
        for name, value in before.items():
            if value is None:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


def _check_unique_key(key: Any) -> None:
    if key is not None:
        check_unique_key(key)
