"""Every error batchq raises on purpose derives from BatchqError.

The CLI turns these into a one-line message and an exit status: 2 for a
mistake in what was asked (ConfigError, TaskError, PayloadError and theirs),
1 for the others; anything else is a bug and keeps its traceback.
"""


class BatchqError(Exception):
    """Base of every error batchq raises on purpose."""


class ConfigError(BatchqError):
    """A bad URL, duration, option or setting."""


class BackendError(BatchqError):
    """The database refused or failed a statement."""


class BackendUnavailable(BackendError):
    """The database could not be reached, or the connection was lost."""


class SchemaMissing(BackendError):
    """The batchq tables do not exist in this database."""


class PayloadError(BatchqError, TypeError):
    """A payload that cannot be serialised, is too large, or cannot be read back."""


class SignatureError(PayloadError):
    """A pickled payload whose signature is missing or wrong: never unpickled."""


class TaskError(BatchqError):
    """A task name that is malformed, unknown or cannot be called."""


class TaskNotAllowed(TaskError):
    """A task the allow-list refuses; a module it does not allow is never imported."""


class JobExpired(BatchqError):
    """A job that had not started by its expiry (enqueue(expires=...)): failed without running,
    never retried. Its failure's error class and reason ('expired'), as the workers record it."""


class ClaimLost(BatchqError):
    """batchq.job_transaction() in a job that gc-processing took back from this worker (its
    database session, or its lease, was lost): the job's transaction is rolled back, and the try
    is recorded nowhere (another worker runs the job, or has run it)."""


class QueueNotFound(BatchqError):
    """A message queue that was never created (or was dropped)."""


class QueueFull(BatchqError):
    """A bounded queue with overflow="reject" is full: nothing was written."""


class MessageHeld(BatchqError):
    """A message a consumer holds (its visibility has not run out): not cancelled."""


class LockError(BatchqError):
    """A lock or semaphore used in a way it cannot be (acquired twice by one handle, a name
    whose fencing token is exhausted)."""


class LockNotAcquired(LockError):
    """`with q.lock(...)`: the lock stayed held by others for the whole wait."""


class LockLost(LockError):
    """A holder's lock expired and was taken by another, or an operator released it: its
    renew() or release() touched nothing, and work done since may overlap another holder's."""


class PayloadInvalid(ConfigError, PayloadError):
    """A payload that does not match its queue's type (JSON Schema): ``path`` is where in the
    payload (``$.items[2].qty``), ``rule`` what it breaks (``-1 is less than the minimum of 1``)."""

    def __init__(self, path: str, rule: str, where: str = "") -> None:
        self.path, self.rule = path, rule
        super().__init__(f"{where}{path}: {rule}")
