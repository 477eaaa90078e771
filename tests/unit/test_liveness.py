"""Liveness without a database: unique worker names, how a name is read back, PostgreSQL's lock keys."""

from __future__ import annotations

import pytest

from batchq.backends.liveness import owner_name, worker_host_and_pid
from batchq.backends.postgresql import liveness_key


def test_worker_names_differ_between_processes_of_one_host_and_pid() -> None:
    names = {owner_name() for _ in range(1000)}
    assert len(names) == 1000
    assert all(worker_host_and_pid(name)[1] is not None for name in names)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("web-1:42:0a1b2c3d", ("web-1", 42)),
        ("web-1:42:12345678", ("web-1", 42)),  # an all-digit random part is not the pid
        ("web-1:42", ("web-1", 42)),  # as versions before the random part wrote it
        ("web-1", ("", None)),
    ],
)
def test_worker_host_and_pid(name: str, expected: tuple[str, int | None]) -> None:
    assert worker_host_and_pid(name) == expected


def test_liveness_keys_are_stable_signed_64_bit() -> None:
    keys = {liveness_key(f"host:{pid}") for pid in range(10000)}
    assert len(keys) == 10000
    assert all(-(2**63) <= key < 2**63 for key in keys)
    assert liveness_key("web-1:42") == liveness_key("web-1:42")
