"""What every store shares: the connection it runs on, and its dialects' variants.

A store is one concern's operations (locks, partitions, schedules, ...) as typed methods: the
parameters as Python values, the result as a value (a bool, an int, a dataclass), the named
queries of ``sql/<dialect>/<concern>.sql`` and the dialects' differences inside. A dialect that
runs an operation its own way (MySQL has no UPDATE ... RETURNING) declares a variant, a subclass
named with ``dialect=``; ``on(backend)`` builds the variant of the backend's dialect, or the
store itself where that dialect needs none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypeVar

if TYPE_CHECKING:
    from ..backends.base import Backend

S = TypeVar("S", bound="Store")


class Store:
    """One concern's operations on one connection (``db``: a Backend, the statements, the
    transactions and their retries)."""

    _variants: ClassVar[dict[str, type[Store]]] = {}

    def __init_subclass__(cls, dialect: str | None = None, **options: object) -> None:
        super().__init_subclass__(**options)
        if dialect is None:
            cls._variants = {}  # a concern's store: its own dialects' variants
        else:
            cls._variants[dialect] = cls  # a variant, registered with the store it refines

    def __init__(self, db: Backend) -> None:
        self.db = db

    @classmethod
    def on(cls: type[S], db: Backend) -> S:
        """This store for ``db``'s dialect: its variant, if the dialect has one."""
        variant = cls._variants.get(db.dialect, cls)
        return variant(db)  # type: ignore[return-value]
