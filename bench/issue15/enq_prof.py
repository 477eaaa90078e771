"""CPU per call (getrusage) and cProfile of enqueue()/enqueue_many(100); run from a checkout."""

# ruff: noqa: E402, SIM115
SORT = "tottime"
import cProfile
import os
import pstats
import resource
import sys
import time

sys.path[:0] = ["bench"] if os.environ.get("ENQ_SIDE") == "before" else [".", "bench"]
from batchq import Queue

from loads import reset
from plain_cycle import PlainCycle
from settings import TASK
from vs_plain import batchq_url


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(backend, n1=3000, nb=100, prof=None):
    reset(backend)
    q = Queue(batchq_url(backend), task_modules="noop_jobs")
    q.enqueue(TASK, {"i": -1})
    out = {}
    for name, calls, f in (
        ("enqueue", n1, lambda i: q.enqueue(TASK, {"i": i})),
        ("many", nb, lambda b: q.enqueue_many(TASK, [{"i": b * 100 + k} for k in range(100)])),
    ):
        p = cProfile.Profile() if prof else None
        c0, t0 = cpu(), time.perf_counter()
        if p:
            p.enable()
        for i in range(calls):
            f(i)
        if p:
            p.disable()
        out[name] = ((cpu() - c0) / calls * 1e6, (time.perf_counter() - t0) / calls * 1e6)
        if p:
            print(f"== {backend} {name}")
            pstats.Stats(p).sort_stats(SORT).print_stats(40)
    q.close()
    c = PlainCycle(backend)
    c.recreate()
    for name, calls, f in (
        ("enqueue", n1, lambda i: c.enqueue({"i": i})),
        ("many", nb, lambda b: c.enqueue_many([{"i": b * 100 + k} for k in range(100)])),
    ):
        c0, t0 = cpu(), time.perf_counter()
        for i in range(calls):
            f(i)
        out["plain_" + name] = ((cpu() - c0) / calls * 1e6, (time.perf_counter() - t0) / calls * 1e6)
    c.close()
    return out


if __name__ == "__main__":
    backend, prof = sys.argv[1], len(sys.argv) > 2
    if prof:
        SORT = sys.argv[2]
    for k, (cp, wall) in run(backend, prof=prof).items():
        print(f"{backend} {k}: cpu {cp:.0f} us/call, wall {wall:.0f} us/call")
