"""batchq: a job queue that lives in the database you already run."""

from .errors import (
    BackendError,
    BackendUnavailable,
    BatchqError,
    ConfigError,
    MessageHeld,
    PayloadError,
    QueueNotFound,
    SchemaMissing,
    SignatureError,
    TaskError,
    TaskNotAllowed,
)
from .mq import Message, MessageQueue, QueueInfo, QueueMetrics
from .queue import Queue, QueueStats
from .tasks import task

__all__ = [
    "BackendError",
    "BackendUnavailable",
    "BatchqError",
    "ConfigError",
    "Message",
    "MessageHeld",
    "MessageQueue",
    "PayloadError",
    "Queue",
    "QueueInfo",
    "QueueMetrics",
    "QueueNotFound",
    "QueueStats",
    "SchemaMissing",
    "SignatureError",
    "TaskError",
    "TaskNotAllowed",
    "task",
]
