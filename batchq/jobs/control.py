"""Control from inside a task (issue 30): what a task raises to say how its job goes on.

- ``raise batchq.Snooze(seconds)``: run the job again that much later. The try is not counted
  (error_count and last_error stay), the job's ``snoozes`` is; a job that snoozes more than its
  task's ``max_snoozes`` (default 1000) fails for good, so a job never loops forever unseen.
- ``raise batchq.Discard(reason)``: the job fails now, for good, with the reason as its error;
  the jobs waiting for it fail with it, as after any last failure.
- ``@task(retry_on=(ExcA,), discard_on=(ExcB,))``: what the task raises that matches discard_on
  fails the job for good; given retry_on, what does not match it does too. Anything else, a
  timeout and a task that returned False retry as before.

Snooze and Discard are BaseExceptions, as JobTimeout is: a task's ``except Exception`` does not
swallow them. The worker's Control middleware (batchq.jobs.calls) reads them; the finishes are
``job_snooze`` and ``job_discard`` (sql/<dialect>/control.sql).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.config import Duration, parse_duration
from ..errors import ConfigError

DEFAULT_MAX_SNOOZES = 1000
MAX_SNOOZES_RANGE = (1, 65535)  # the snoozes column (SMALLINT UNSIGNED on MySQL)
Exceptions = tuple[type[BaseException], ...]


class Snooze(BaseException):
    """Raised by a task: run its job again ``seconds`` later (a number, a timedelta, or text such
    as "5m"; 0: as soon as a worker claims it), without counting the try. Bad seconds (negative,
    NaN, over 100 years) raise ConfigError here, which fails the try as any error does."""

    def __init__(self, seconds: Duration = 0) -> None:
        self.seconds = parse_duration(seconds, "Snooze seconds")
        super().__init__(self.seconds)

    def __str__(self) -> str:
        return f"snoozed for {self.seconds:g} seconds"


class Discard(BaseException):
    """Raised by a task: fail its job now, for good, with ``reason`` as its error; no retry."""

    def __init__(self, reason: object = "discarded by its task") -> None:
        self.reason = reason
        super().__init__(reason)


def snooze_seconds(snooze: Snooze) -> float:
    """The delay of a Snooze the task raised, checked again: a subclass may have skipped
    Snooze.__init__ or set ``seconds`` after it (ConfigError then, which fails the try)."""
    return parse_duration(getattr(snooze, "seconds", None), "Snooze seconds")


@dataclass(frozen=True, slots=True)
class TaskControl:
    """What @task declared about its exceptions and snoozes, read once per task by a worker."""

    retry_on: Exceptions | None = None  # None: every exception is retried (tries permitting)
    discard_on: Exceptions = ()
    max_snoozes: int = DEFAULT_MAX_SNOOZES

    def for_good(self, exc: BaseException) -> str | None:
        """Why what the task raised is not retried (a Discard, discard_on, retry_on); None: it is."""
        if isinstance(exc, Discard):
            return "the task raised Discard"
        if self.discard_on and isinstance(exc, self.discard_on):
            return f"{type(exc).__name__} is in the task's discard_on"
        if self.retry_on is not None and not isinstance(exc, self.retry_on):
            return f"{type(exc).__name__} is not in the task's retry_on"
        return None


PLAIN = TaskControl()  # a task that declares nothing


def task_control(func: Callable[..., Any]) -> TaskControl:
    """A task's declarations (set by @task; a --handler or a plain function declares none)."""
    retry_on = getattr(func, "batchq_retry_on", None)
    discard_on = getattr(func, "batchq_discard_on", ())
    max_snoozes = getattr(func, "batchq_max_snoozes", DEFAULT_MAX_SNOOZES)
    if retry_on is None and not discard_on and max_snoozes == DEFAULT_MAX_SNOOZES:
        return PLAIN
    return TaskControl(retry_on, discard_on, max_snoozes)


def check_exceptions(value: Any, what: str) -> Exceptions | None:
    """``retry_on``/``discard_on`` of @task: an exception class or a tuple or list of them, as
    ``except`` takes them; None stays None. ConfigError, at decoration, for anything else."""
    if value is None:
        return None
    given = (value,) if inspect.isclass(value) else value
    if not isinstance(given, (tuple, list)):
        raise ConfigError(f"bad {what} {value!r} for a task: give an exception class or a tuple of them")
    if not given:
        hint = " (to never retry, use max_errors=1)" if what == "retry_on" else ""
        raise ConfigError(
            f"{what} is empty: give an exception class or a tuple of them, or leave it out{hint}"
        )
    for kind in given:
        if not inspect.isclass(kind) or not issubclass(kind, BaseException):
            raise ConfigError(
                f"bad {what} entry {kind!r} for a task: only exception classes (such as ValueError)"
            )
        if issubclass(kind, (Snooze, Discard)):
            raise ConfigError(
                f"{what} lists {kind.__name__}, which is no failure: Snooze and Discard act whatever "
                f"{what} says"
            )
    return tuple(given)


def check_max_snoozes(value: Any) -> int:
    low, high = MAX_SNOOZES_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"bad max_snoozes {value!r} for a task: use a whole number from {low} to {high}")
    return value


def snooze_limit_error(job_id: int, max_snoozes: int) -> str:
    """last_error of a job failed for good because its task snoozed it too often."""
    return (
        f"SnoozeLimit: job {job_id} snoozed {max_snoozes} times, the most its task allows; "
        "raise @task(max_snoozes=...) if it needs more, or give it an expiry (enqueue(expires=...))"
    )
