"""A queue's settings as an operator sees them (`batchq configure`, `batchq stats`, the
dashboard): a job queue's pause flag, history retention (keep_for), bound and type, read from its
``batchq_queue`` row; a message queue's are in batchq.mq.overview. Setting them stays with the
APIs that own them (Queue.configure, pause/resume, alter_queue). Read them with
``backend.stores.settings.job_queues()`` (batchq.stores.settings, where these names live); this
module names them for their readers (the CLI, the dashboard, the message queues' overview).
"""

from __future__ import annotations

from ..stores.settings import JobQueueSettings as JobQueueSettings
from ..stores.settings import schema_name as schema_name
from ..stores.settings import stored_schema as stored_schema
