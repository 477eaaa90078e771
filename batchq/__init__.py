"""batchq: a job queue that lives in the database you already run."""

from typing import TYPE_CHECKING, Any

from .coordination.locks import Acquired, Lock, LockInfo, Semaphore
from .core.job import current_job, job_transaction
from .errors import (
    BackendError,
    BackendUnavailable,
    BatchqError,
    ClaimLost,
    ConfigError,
    JobExpired,
    LockError,
    LockLost,
    LockNotAcquired,
    MessageHeld,
    PayloadError,
    PayloadInvalid,
    QueueFull,
    QueueNotFound,
    SchemaMissing,
    SignatureError,
    TaskError,
    TaskNotAllowed,
)
from .jobs.control import Discard, Snooze
from .jobs.reporting import progress
from .jobs.results import JobError, JobResult
from .jobs.tasks import task
from .jobs.timeouts import JobTimeout
from .queue import Enqueued, Group, Queue, QueueStats

if TYPE_CHECKING:
    from .mq import ArchivedMessage, Message, MessageQueue, QueueInfo, QueueMetrics
    from .mq.pubsub import Subscription, subscriber

# The message-queue API loads on first use: `batchq run`, started by cron every minute, never needs it.
_MQ_NAMES = {"ArchivedMessage", "Message", "MessageQueue", "QueueInfo", "QueueMetrics"}
_PUBSUB_NAMES = {"Subscription", "subscriber"}


def __getattr__(name: str) -> Any:
    if name in _MQ_NAMES:
        from . import mq

        return getattr(mq, name)
    if name in _PUBSUB_NAMES:
        from .mq import pubsub

        return getattr(pubsub, name)
    raise AttributeError(f"module 'batchq' has no attribute {name!r}")


__all__ = [
    "Acquired",
    "ArchivedMessage",
    "BackendError",
    "BackendUnavailable",
    "BatchqError",
    "ClaimLost",
    "ConfigError",
    "Discard",
    "Enqueued",
    "Group",
    "JobError",
    "JobExpired",
    "JobResult",
    "JobTimeout",
    "Lock",
    "LockError",
    "LockInfo",
    "LockLost",
    "LockNotAcquired",
    "Message",
    "MessageHeld",
    "MessageQueue",
    "PayloadError",
    "PayloadInvalid",
    "Queue",
    "QueueInfo",
    "QueueFull",
    "QueueMetrics",
    "QueueNotFound",
    "QueueStats",
    "SchemaMissing",
    "Semaphore",
    "Snooze",
    "SignatureError",
    "Subscription",
    "TaskError",
    "TaskNotAllowed",
    "current_job",
    "progress",
    "job_transaction",
    "subscriber",
    "task",
]
