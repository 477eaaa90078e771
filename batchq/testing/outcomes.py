"""What a job did when a test ran it: inline at enqueue, or by drain()."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..jobs.reporting import Report


class JobFailed(AssertionError):
    """A job a test ran failed: it returned False, or failed without running (a task it may not
    call, a payload that does not match its queue's type). What a task raised is raised itself."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(f"job {outcome.label()} failed: {outcome.error}")
        self.outcome = outcome


@dataclass(frozen=True)
class Outcome:
    """One run of one job. ``error`` is the text a worker stores in ``last_error`` (type, message
    and the last frames); ``exception`` what the task raised, if it raised. ``snoozed_for``: the
    task raised batchq.Snooze (seconds), so the job was put back, neither succeeded nor failed."""

    job_id: int
    queue: str
    task: str
    succeeded: bool
    value: Any = None  # what the task returned (kept in the history when asked)
    error: str | None = None
    exception: BaseException | None = None
    # What the task reported with batchq.progress(), in order, unthrottled (the latest 1000).
    progress: tuple[Report, ...] = ()
    snoozed_for: float | None = None

    @property
    def failed(self) -> bool:
        return not self.succeeded and self.snoozed_for is None

    @property
    def snoozed(self) -> bool:
        return self.snoozed_for is not None

    def label(self) -> str:
        return f"{self.job_id} ({self.task}, queue {self.queue!r})"

    def raise_error(self) -> None:
        """Raise what the task raised (its own traceback), else JobFailed; nothing on success or
        a snooze."""
        if not self.failed:
            return
        if self.exception is not None:
            raise self.exception
        raise JobFailed(self)


class Outcomes(list[Outcome]):
    """The outcomes of the jobs run, in the order they ran."""

    @property
    def succeeded(self) -> list[Outcome]:
        return [outcome for outcome in self if outcome.succeeded]

    @property
    def failed(self) -> list[Outcome]:
        return [outcome for outcome in self if outcome.failed]

    @property
    def snoozed(self) -> list[Outcome]:
        return [outcome for outcome in self if outcome.snoozed]

    def values(self) -> list[Any]:
        """What each succeeded job returned, in order."""
        return [outcome.value for outcome in self.succeeded]

    def raise_errors(self) -> Outcomes:
        """Raise the first failure (what its task raised, else JobFailed); else return self."""
        for outcome in self.failed:
            outcome.raise_error()
        return self
