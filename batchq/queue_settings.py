"""A queue's settings as an operator sees them (`batchq configure`, `batchq stats`, the
dashboard): a job queue's pause flag, history retention (keep_for), bound and type, read from its
``batchq_queue`` row; a message queue's are in batchq.mq.overview. Setting them stays with the
APIs that own them (Queue.configure, pause/resume, alter_queue): this module only reads, through
the settings store (batchq.stores.settings).
"""

from __future__ import annotations

from .backends import Backend
from .stores.settings import JobQueueSettings
from .stores.settings import schema_name as schema_name  # re-exported for its readers
from .stores.settings import stored_schema as stored_schema


def job_queue_settings(backend: Backend, queue: str | None = None) -> dict[str, JobQueueSettings]:
    """The settings of every job queue that has any row (or of ``queue``), by name; a queue with
    no row has none set (the defaults: running, no history, unbounded, untyped)."""
    return backend.stores.settings.job_queues(queue)
