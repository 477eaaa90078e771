"""Locks and semaphores between processes: contention, and a holder killed with SIGKILL.

Each contender records its holdings (tests/apps/lock_contender.py) on the host's monotonic
clock, just inside the real holding; the intervals of all processes are then swept to find
how many overlapped at most.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from batchq import Queue
from batchq.coordination.locks import list_locks
from tests.support.cli import invoke_batchq
from tests.support.processes import APPS_DIR, batchq_env, wait_for

CONTENDERS = 6
ROUNDS = 8


def _contender(db_url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(APPS_DIR / "lock_contender.py"), db_url, *args],
        env=batchq_env(db_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _contend(db_url: str, tmp_path: Path, name: str, limit: int, hold: float) -> list[dict[str, Any]]:
    outs = [tmp_path / f"holdings-{i}.jsonl" for i in range(CONTENDERS)]
    procs = [_contender(db_url, name, str(limit), str(ROUNDS), str(hold), str(out)) for out in outs]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    return [json.loads(line) for out in outs for line in out.read_text().splitlines()]


def _most_at_once(holdings: list[dict[str, Any]]) -> int:
    """The most holdings that overlapped at any instant (an end at the same instant as a start
    counts first: the two did not overlap)."""
    events = sorted([(h["start"], 1) for h in holdings] + [(h["end"], -1) for h in holdings])
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return most


def _tokens_in_order(holdings: list[dict[str, Any]]) -> list[int]:
    return [h["token"] for h in sorted(holdings, key=lambda h: h["start"])]


def test_processes_contending_for_a_lock_hold_it_one_at_a_time(db_url: str, tmp_path: Path) -> None:
    holdings = _contend(db_url, tmp_path, "nightly-report", 1, hold=0.05)
    assert len(holdings) == CONTENDERS * ROUNDS
    assert _most_at_once(holdings) == 1
    # Fencing: one more per acquisition, in the order the holdings happened.
    assert _tokens_in_order(holdings) == list(range(1, CONTENDERS * ROUNDS + 1))


def test_processes_contending_for_a_semaphore_never_exceed_its_limit(db_url: str, tmp_path: Path) -> None:
    limit = 3
    holdings = _contend(db_url, tmp_path, "smtp", limit, hold=0.1)
    assert len(holdings) == CONTENDERS * ROUNDS
    assert _most_at_once(holdings) == limit  # reached, never exceeded
    for slot in range(limit):
        of_slot = [h for h in holdings if h["slot"] == slot]
        assert of_slot and _most_at_once(of_slot) == 1
        assert _tokens_in_order(of_slot) == list(range(1, len(of_slot) + 1))
    assert {h["slot"] for h in holdings} == set(range(limit))


def test_killed_holder_frees_the_lock_at_expiry_not_before(queue: Queue, db_url: str, tmp_path: Path) -> None:
    marker = tmp_path / "held"
    holder = _contender(db_url, "nightly", "1", "hold", "3s", str(marker))
    owner = wait_for(lambda: marker.exists() and marker.read_text(), timeout=30)
    (info,) = list_locks(queue)
    assert info.holder == owner and info.expires_in is not None
    left, seen_at = info.expires_in, time.monotonic()
    holder.kill()
    holder.wait(timeout=10)

    listed = invoke_batchq(db_url, "locks")
    assert owner in listed.stdout  # a dead holder's lock is held until its expire_at
    waiter = queue.lock("nightly", ttl="30s")
    refused = waiter.acquire()
    assert not refused and refused.holders == (owner,)
    got = waiter.acquire(wait="30s")
    freed_after = time.monotonic() - seen_at
    assert got and got.token == 2
    assert left - 0.3 <= freed_after <= left + 3, (left, freed_after)
