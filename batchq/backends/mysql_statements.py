"""How big a MySQL statement may be, and how batchq splits a multi-row INSERT into statements
that fit: shared by the MySQL backend (batchq.backends.mysql) and the job store's MySQL variant
(batchq.stores.jobs), which builds the enqueue statements. A leaf: it imports no backend.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from ..errors import PayloadError

VALUES = re.compile(r"\s+VALUES\s+", re.IGNORECASE)  # splits an INSERT into its head and its row
MULTI_ROW_STATEMENT_BYTES = 1024 * 1024  # a multi-row INSERT's size; a bigger row goes alone
# The server refuses a statement (plus its one command byte) that is not smaller than
# max_allowed_packet, and drops the connection: measured on MariaDB 10.11, with 1 MiB and 16 MiB,
# a statement of max_allowed_packet - 2 bytes passes and one of max_allowed_packet - 1 does not.
PACKET_OVERHEAD = 2


def chunks(values: list[bytes], budget: int) -> Iterator[list[bytes]]:
    """Consecutive VALUES groups of at most ``budget`` bytes joined; a bigger one goes alone."""
    chunk: list[bytes] = []
    size = 0
    for value in values:
        if chunk and size + len(value) > budget:
            yield chunk
            chunk, size = [], 0
        chunk.append(value)
        size += len(value) + 1
    if chunk:
        yield chunk


def check_statement_size(length: int, limit: int) -> None:
    """PayloadError, before anything is sent, for a statement the server would refuse."""
    if length > limit:
        raise PayloadError(
            f"the payload makes its INSERT {length:,} bytes on the wire (binary "
            "data travels hex-encoded, at twice its size), more than this database accepts "
            f"(max_allowed_packet {limit + PACKET_OVERHEAD:,} bytes): store large data "
            "elsewhere and pass a reference to it, or raise max_allowed_packet"
        )


@functools.cache  # asked on every claim that keeps history (check_history)
def supports_skip_locked(version: str) -> bool:
    """MySQL >= 8.0.1 and MariaDB >= 10.6 have SKIP LOCKED."""
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    if not match:
        return False
    numbers = tuple(int(n) for n in match.groups())
    if "mariadb" in version.lower():
        return numbers >= (10, 6, 0)
    return numbers >= (8, 0, 1)
