"""The processes a timed-out job started: found and killed, so that none outlives the job and a
retry does not run beside them.

A task runs in the worker's own process, so what it starts (``subprocess``, ``os.system``, a
shell and what the shell starts) is a descendant of the worker. The job's are those below the
worker's children that started after the job began (a worker runs one job at a time; a child
an earlier job left is not this job's). They are found on Linux from /proc (elsewhere not at
all: a task must kill its own children when it catches JobTimeout). Each is killed with
SIGKILL, and so is the process group of any that leads its own (``start_new_session=True``),
which holds what it started in the background. A process that left the tree before the
timeout (a daemon that forked twice and called setsid) is not found.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass

_PROC = "/proc"
REAP_SECONDS = 1.0  # how long to wait for a killed child of the worker to be reaped


@dataclass(frozen=True)
class _Stat:
    ppid: int
    pgid: int
    start: int  # clock ticks since boot


def clock_ticks() -> int | None:
    """Now, in the unit of /proc's process start times (None where there is no /proc)."""
    if not sys.platform.startswith("linux"):
        return None
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


def _stat(pid: int) -> _Stat | None:
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as file:
            text = file.read()
    except OSError:
        return None
    fields = text[text.rindex(b")") + 2 :].split()  # after the command name, which may hold spaces
    if fields[0] == b"Z":
        return None  # already dead: nothing to kill
    return _Stat(ppid=int(fields[1]), pgid=int(fields[2]), start=int(fields[19]))


def _all_processes() -> dict[int, _Stat]:
    table = {}
    for name in os.listdir(_PROC):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                table[int(name)] = stat
    return table


def started_since(ticks: int | None) -> dict[int, int]:
    """This process's descendants below children started at ``ticks`` or later: pid -> start."""
    if ticks is None:
        return {}
    table = _all_processes()
    below: dict[int, list[int]] = {}
    for pid, stat in table.items():
        below.setdefault(stat.ppid, []).append(pid)
    me = os.getpid()
    found = [pid for pid in below.get(me, []) if table[pid].start >= ticks]
    for pid in found:  # grows as it goes: a breadth-first walk
        found.extend(below.get(pid, []))
    return {pid: table[pid].start for pid in found}


def kill_processes(processes: dict[int, int]) -> list[int]:
    """SIGKILL each process still running as found (same start: its pid not reused), and the
    process group it leads, if any; reap those that are this process's children. The killed."""
    killed, children = [], []
    for pid, start in processes.items():
        stat = _stat(pid)
        if stat is None or stat.start != start:
            continue
        with contextlib.suppress(OSError):
            if stat.pgid == pid:
                os.killpg(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            if stat.ppid == os.getpid():
                children.append(pid)
    _reap(children)
    return killed


def _reap(pids: list[int]) -> None:
    """Wait for killed children, so that no zombie is left in a long-running worker (a task's
    Popen.wait() on one then returns 0, as after any child reaped elsewhere)."""
    deadline = time.monotonic() + REAP_SECONDS
    waiting = set(pids)
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid  # reaped already (by the task's own Popen)
            if done:
                waiting.discard(pid)
        if waiting:
            time.sleep(0.01)
