"""Prometheus metrics of the queues (`batchq metrics`), in the text format prometheus_client writes.

A collector reads the tables when asked (plain SELECTs in autocommit, through the stores:
batchq.stores.inspection; ages on the database server's clock) and yields gauges; the
format, and the escaping of label values (queue names are whatever rows hold), are
prometheus_client's. ``write_textfile`` replaces a file atomically (through a random temporary
name) for node_exporter's textfile collector.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..backends import Backend
from ..core.stored import stored_seconds, stored_text
from ..mq.overview import queue_figures
from ..stores.inspection import FinishedJobs, QueueMetrics
from .registry import list_workers

STATES = ("ready", "delayed", "blocked", "processing", "failed")
MQ_STATES = ("visible", "delayed", "held")
WORKER_STATES = ("running", "stopping", "gone", "unknown")  # batchq.ops.registry.WorkerInfo.state
# Jobs kept in history are counted over this window, not since forever: history is pruned, so
# a count of its rows goes down, which Prometheus would read as a counter reset.
DEFAULT_HISTORY_WINDOW_SECONDS = 300.0


def read_queues(backend: Backend) -> list[QueueMetrics]:
    """Per queue (every queue with jobs, and every queue ever paused), ordered by name."""
    return backend.stores.inspection.queue_metrics()


def read_finished(backend: Backend, window: float) -> list[FinishedJobs]:
    """Jobs kept in history that finished in the last ``window`` seconds, per queue, task and
    outcome."""
    return backend.stores.inspection.finished(window)


def read_locks_held(backend: Backend) -> int:
    return backend.stores.inspection.locks_held()


class QueueCollector(Collector):
    """Reads the tables at every collect(): one scrape, one fresh set of numbers."""

    def __init__(self, backend: Backend, history_window: float = DEFAULT_HISTORY_WINDOW_SECONDS) -> None:
        self.backend = backend
        self.history_window = history_window

    def collect(self) -> Iterator[Metric]:
        queues = read_queues(self.backend)
        jobs = GaugeMetricFamily(
            "batchq_jobs",
            "Jobs per queue and state: ready (due), delayed (not due yet), blocked (due, waiting for a "
            "concurrency slot), processing, failed.",
            labels=["queue", "state"],
        )
        paused = GaugeMetricFamily("batchq_queue_paused", "1 if workers skip the queue.", labels=["queue"])
        oldest_due = GaugeMetricFamily(
            "batchq_oldest_due_job_age_seconds",
            "Seconds since the oldest due job of the queue became due (0 with none due).",
            labels=["queue"],
        )
        oldest_processing = GaugeMetricFamily(
            "batchq_oldest_processing_job_age_seconds",
            "Seconds since the oldest claim of the queue was made (0 with none).",
            labels=["queue"],
        )
        for q in queues:
            for state in STATES:
                jobs.add_metric([q.queue, state], getattr(q, state))
            paused.add_metric([q.queue], 1 if q.paused else 0)
            oldest_due.add_metric([q.queue], q.oldest_due_seconds)
            oldest_processing.add_metric([q.queue], q.oldest_processing_seconds)
        yield from (jobs, paused, oldest_due, oldest_processing)
        yield from self._message_queues()
        yield from self._finished()
        yield from self._workers_and_schedules()
        yield GaugeMetricFamily(
            "batchq_locks_held",
            "Lock and semaphore slots held now (batchq locks), on the database's clock.",
            value=read_locks_held(self.backend),
        )

    def _workers_and_schedules(self) -> Iterator[Metric]:
        """What the alerting kit's "no worker" and "schedules not ticking" rules read
        (deploy/prometheus/batchq-alerts.yml): the registered workers by state, and each enabled
        schedule's next slot as a Unix time, which Prometheus compares with its own clock."""
        workers = GaugeMetricFamily(
            "batchq_workers",
            "Registered workers (batchq run, batchq consume) by state: running, stopping, gone "
            "(died without unregistering), unknown (another host's, on SQLite).",
            labels=["state"],
        )
        states = [info.state for info in list_workers(self.backend)]
        for state in WORKER_STATES:
            workers.add_metric([state], states.count(state))
        yield workers
        slots = GaugeMetricFamily(
            "batchq_schedule_next_run_timestamp_seconds",
            "Unix time of an enabled schedule's next slot; far in the past: nothing ticks.",
            labels=["schedule"],
        )
        for row in self.backend.stores.schedules.all():
            seconds = stored_seconds(row["next_exec"])
            if row["enabled"] and seconds is not None:
                slots.add_metric([stored_text(row["name"])], seconds)
        yield slots

    def _message_queues(self) -> Iterator[Metric]:
        """Per message queue: its messages by state, the oldest's age, its archive, the messages
        ever sent (a counter: it only grows, until the queue is dropped), its bound; per
        subscription, the backlog of its queue."""
        labels = ["queue"]
        messages = GaugeMetricFamily(
            "batchq_mq_messages",
            "Messages per message queue and state: visible (readable now), delayed (not yet visible, "
            "never read), held (read, invisible until its vt: in flight).",
            labels=["queue", "state"],
        )
        oldest = GaugeMetricFamily(
            "batchq_mq_oldest_message_age_seconds",
            "Seconds since the oldest message of the queue was sent (0 when it is empty).",
            labels=labels,
        )
        redelivered = GaugeMetricFamily(
            "batchq_mq_redelivered_messages",
            "Messages in the queue read more than once (a consumer's hold ran out before it was done).",
            labels=labels,
        )
        archived = GaugeMetricFamily(
            "batchq_mq_archived_messages", "Messages in the queue's archive.", labels=labels
        )
        sent = CounterMetricFamily(
            "batchq_mq_sent", "Messages sent to the queue (committed) since it was created.", labels=labels
        )
        bound = GaugeMetricFamily(
            "batchq_mq_max_length", "The queue's bound (only bounded queues have the series).", labels=labels
        )
        backlog = GaugeMetricFamily(
            "batchq_mq_subscription_messages",
            "Messages waiting in a subscription's queue (visible, delayed or held): its backlog.",
            labels=["topic", "subscriber"],
        )
        for f in queue_figures(self.backend):
            for state in MQ_STATES:
                messages.add_metric([f.queue, state], getattr(f, state))
            oldest.add_metric([f.queue], f.oldest_age_seconds or 0.0)
            redelivered.add_metric([f.queue], f.redelivered)
            archived.add_metric([f.queue], f.archived)
            sent.add_metric([f.queue], f.sent)
            if f.max_length is not None:
                bound.add_metric([f.queue], f.max_length)
            if f.subscription is not None:
                backlog.add_metric([f.subscription.topic, f.subscription.subscriber], f.messages)
        yield from (messages, oldest, redelivered, archived, sent, bound, backlog)

    def _finished(self) -> Iterator[Metric]:
        """Per queue, task and outcome, the jobs kept in history that finished within the window,
        and their wall and CPU times (where no history is kept, no series)."""
        window = self.history_window
        labels = ["queue", "task", "outcome"]
        within = f"in the last {window:g} s (jobs kept in history)"
        families = {
            "jobs": GaugeMetricFamily("batchq_finished_jobs", f"Jobs finished {within}.", labels=labels),
            "wall_seconds": GaugeMetricFamily(
                "batchq_finished_jobs_wall_seconds",
                f"Summed wall time of the jobs finished {within}.",
                labels=labels,
            ),
            "wall_max_seconds": GaugeMetricFamily(
                "batchq_finished_jobs_wall_seconds_max",
                f"Longest wall time of a job finished {within}.",
                labels=labels,
            ),
            "cpu_seconds": GaugeMetricFamily(
                "batchq_finished_jobs_cpu_seconds",
                f"Summed CPU time (user + system) of the jobs finished {within}.",
                labels=labels,
            ),
        }
        for finished in read_finished(self.backend, window):
            for field_name, family in families.items():
                family.add_metric(
                    [finished.queue, finished.task, finished.outcome], getattr(finished, field_name)
                )
        yield from families.values()
        yield GaugeMetricFamily(
            "batchq_finished_jobs_window_seconds",
            "The window of the batchq_finished_jobs metrics.",
            value=window,
        )


def registry(backend: Backend, history_window: float = DEFAULT_HISTORY_WINDOW_SECONDS) -> CollectorRegistry:
    """A registry of batchq's metrics alone (no process or platform metrics of this command)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(QueueCollector(backend, history_window))
    return reg


def render(backend: Backend, history_window: float = DEFAULT_HISTORY_WINDOW_SECONDS) -> bytes:
    """The metrics in the Prometheus text format."""
    return generate_latest(registry(backend, history_window))


def write_textfile(
    backend: Backend, path: str | os.PathLike[str], history_window: float = DEFAULT_HISTORY_WINDOW_SECONDS
) -> None:
    """Replace ``path`` with the metrics, atomically: written to a temporary file in the same
    folder, renamed over ``path``, so node_exporter never reads half a file. A database error
    leaves the old file as it was (and no temporary file): its mtime, which node_exporter
    exports, shows how old it is."""
    text = render(backend, history_window)  # first: a database error writes nothing
    target = os.fspath(path)
    folder, name = os.path.split(target)
    # A random name, created exclusively (O_EXCL: never through a link planted at a name that
    # can be guessed, as prometheus_client's path.pid.thread can); not .prom, so unread.
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as open() would make it: node_exporter may read it
        with os.fdopen(fd, "wb") as file:
            file.write(text)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask sets it: put it straight back
    os.umask(mask)
    return mask
