"""Stores: each concern's operations as typed methods, on one connection (a Backend).

Features call ``backend.stores.locks.take(name, owner, limit=1, ttl=30)``, never a query by its
name: a store owns its concern's named queries (``sql/<dialect>/<concern>.sql``) and the
dialects' differences (a variant per dialect that needs one, batchq.stores.base). The backend is
the connection: statements, transactions, retries, liveness. Every store's methods are run
against every dialect by tests/contract/test_stores_*.py.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from .bounds import BoundStore
from .charts import ChartStore
from .dependencies import DependencyStore
from .flow import FlowStore
from .inspection import InspectionStore
from .jobs import JobStore
from .locks import LockStore
from .message_views import MessageViewStore
from .messages import MessageStore
from .partitions import PartitionStore
from .schedules import ScheduleStore
from .settings import SettingsStore
from .topics import TopicStore
from .workers import WorkerStore

if TYPE_CHECKING:
    from ..backends.base import Backend


class Stores:
    """The stores of one connection, each made on first use."""

    def __init__(self, db: Backend) -> None:
        self._db = db

    @cached_property
    def locks(self) -> LockStore:
        return LockStore.on(self._db)

    @cached_property
    def partitions(self) -> PartitionStore:
        return PartitionStore.on(self._db)

    @cached_property
    def schedules(self) -> ScheduleStore:
        return ScheduleStore.on(self._db)

    @cached_property
    def bounds(self) -> BoundStore:
        return BoundStore.on(self._db)

    @cached_property
    def workers(self) -> WorkerStore:
        return WorkerStore.on(self._db)

    @cached_property
    def flow(self) -> FlowStore:
        return FlowStore.on(self._db)

    @cached_property
    def settings(self) -> SettingsStore:
        return SettingsStore.on(self._db)

    @cached_property
    def charts(self) -> ChartStore:
        return ChartStore.on(self._db)

    @cached_property
    def inspection(self) -> InspectionStore:
        return InspectionStore.on(self._db)

    @cached_property
    def dependencies(self) -> DependencyStore:
        return DependencyStore.on(self._db)

    @cached_property
    def messages(self) -> MessageStore:
        return MessageStore.on(self._db)

    @cached_property
    def topics(self) -> TopicStore:
        return TopicStore.on(self._db)

    @cached_property
    def message_views(self) -> MessageViewStore:
        return MessageViewStore.on(self._db)

    @cached_property
    def jobs(self) -> JobStore:
        return JobStore.on(self._db)
