"""Claim latency against table size: 10k vs 1M ready, and 100k delayed / 100k failed beside 10k ready.

    .venv/bin/python bench/scale.py --backend mysql --claims 1000 --repeat 3

For each scenario the table is emptied and loaded server-side (not timed). Then, --repeat
times, alternately: --claims raw-SQL floor claims (batchq's claim statements on the raw
driver, one short transaction each) and --claims batchq claims (`Queue(url).backend.stores.jobs.claim()`,
the call `batchq run` makes for every job, in-process so each claim can be timed). Only
the claim is timed; each claimed job is then acked (job_delete) untimed, as a worker would.
The EXPLAIN (MariaDB: ANALYZE, which runs the SELECT and reports rows read; PostgreSQL:
EXPLAIN (ANALYZE, BUFFERS) of the claim UPDATE inside BEGIN ... ROLLBACK, with the
parameters bound as batchq binds them) of the claim is printed for each scenario.

After each load: MariaDB waits for InnoDB's dirty pages to stop falling; PostgreSQL runs
CHECKPOINT (bulk_load has already run VACUUM (ANALYZE)), so the load's dirty buffers are
written before the timed claims. CHECKPOINT needs a superuser or, from PostgreSQL 15, a
role granted pg_checkpoint: without it the step is skipped with a note on stderr.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

from floors import floor_for
from loads import bulk_load, reset
from machine import server_info
from options import parse, parser
from report import command_line, emit, table
from settings import url_for
from stats import med_range, median, percentile


def scenarios(big: int) -> list[tuple[str, dict]]:
    return [
        ("10,000 ready", dict(ready=10_000)),
        (f"{big:,} ready", dict(ready=big)),
        ("10,000 ready + 100,000 delayed (run_at +1h)", dict(ready=10_000, delayed=100_000)),
        ("10,000 ready + 100,000 failed", dict(ready=10_000, failed=100_000)),
        (
            "10,000 ready + 100,000 delayed at priority 1 (ready at 0)",
            dict(ready=10_000, delayed=100_000, delayed_priority=1, slow=True),
        ),
        (
            "0 ready + 100,000 delayed: the empty claim of an idle or exiting worker",
            dict(ready=0, delayed=100_000, slow=True, empty=True),
        ),
    ]


def load(
    backend: str,
    ready: int = 0,
    delayed: int = 0,
    failed: int = 0,
    delayed_priority: int = 0,
    slow: bool = False,
    empty: bool = False,
) -> float:
    t0 = time.perf_counter()
    reset(backend)
    # ids: ready first (oldest), then the others, as a backlog that has built up would look.
    bulk_load(backend, ready)
    bulk_load(backend, delayed, delay_seconds=3600, priority=delayed_priority, start=ready)
    bulk_load(backend, failed, status="failed", start=ready + delayed)
    waited = settle(backend)
    what = {"mysql": "InnoDB flushing", "postgresql": "CHECKPOINT"}.get(backend, "nothing")
    print(f"# waited {waited:.0f}s for {what}", file=sys.stderr, flush=True)
    return time.perf_counter() - t0


def settle(backend: str, limit: float = 60.0) -> float:
    """MariaDB: after a bulk load, wait until InnoDB's dirty pages stop falling (or `limit`
    seconds), so that the load's background flushing does not slow the commits being timed.
    (An idle MariaDB 10.11 with io_capacity 200 keeps ~25 % of a 128 MiB pool dirty, so
    waiting for "clean" never ends.) PostgreSQL: one CHECKPOINT, which writes every dirty
    buffer now (superuser or pg_checkpoint; skipped with a note otherwise).
    Returns the seconds waited."""
    if backend == "postgresql":
        return checkpoint()
    if backend != "mysql":
        return 0.0
    f = floor_for(backend)
    t0 = time.perf_counter()
    best, stalled = None, 0
    while time.perf_counter() - t0 < limit and stalled < 3:
        ((_, dirty),) = f.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
        dirty = int(dirty)
        if best is None or dirty < best * 0.98:
            best, stalled = dirty, 0
        else:
            stalled += 1
        time.sleep(1.0)
    f.close()
    return time.perf_counter() - t0


def checkpoint() -> float:
    import psycopg

    f = floor_for("postgresql")
    t0 = time.perf_counter()
    try:
        f.execute("CHECKPOINT")
    except psycopg.errors.InsufficientPrivilege as exc:
        print(
            f"# CHECKPOINT skipped ({' '.join(str(exc).split())}): needs a superuser or pg_checkpoint",
            file=sys.stderr,
            flush=True,
        )
    f.close()
    return time.perf_counter() - t0


# The claim's parameters with nothing finished to delete (PostgreSQL and SQLite ignore extras).
CLAIM_PARAMS = {
    "queue": "default",
    "limit": 1,
    "worker": "w",
    "token": "t",
    "done_token": None,
    "done_ids": [],
}


def mysql_claim_select(f: Any) -> str:
    """The locking SELECT of MySQL's multi-statement claim: its last statement."""
    return str(f.q["jobs_claim"].split(";")[-1])


def explain(backend: str) -> str:
    f = floor_for(backend)
    if backend == "postgresql":
        # The claim is an UPDATE: EXPLAIN ANALYZE runs it, so it is rolled back.
        f.begin()
        rows = f.execute("EXPLAIN (ANALYZE, BUFFERS) " + f.q["jobs_claim"], CLAIM_PARAMS)
        f.conn.rollback()
        out = "\n".join(f"    {r[0]}" for r in rows)
    elif backend == "mysql":
        sql = f.cur.mogrify(mysql_claim_select(f), {"queue": "default", "limit": 1})
        f.conn.begin()
        rows = f.execute("ANALYZE " + sql)
        f.conn.rollback()
        cols = [d[0] for d in f.cur.description]
        out = table(cols, rows)
    else:
        rows = f.execute("EXPLAIN QUERY PLAN " + f.q["jobs_claim"], CLAIM_PARAMS)
        out = "\n".join(f"    {r[3]}" for r in rows)
    f.close()
    return out


def floor_claims(backend: str, n: int, empty: bool = False) -> list[float]:
    f = floor_for(backend)
    worker = f"{socket.gethostname()}:{os.getpid()}"
    lat = []
    pc = time.perf_counter
    for _ in range(n):
        token = os.urandom(16).hex()
        s = pc()
        _, jobs = f.claim(worker, token)
        lat.append(pc() - s)
        if empty and not jobs:
            continue
        if not jobs:
            raise RuntimeError("queue ran dry")
        f.ack(jobs, token)
    f.close()
    return lat


def select_only(backend: str, n: int, empty: bool = False) -> list[float]:
    """The claim's SELECT (MySQL) / claim UPDATE (SQLite, PostgreSQL) alone, rolled back: the
    index walk, no commit."""
    f = floor_for(backend)
    lat = []
    pc = time.perf_counter
    for _ in range(n):
        if backend == "mysql":
            f.conn.begin()
            s = pc()
            f.cur.execute(mysql_claim_select(f), {"queue": "default", "limit": 1})
            job = f.cur.fetchone()
            lat.append(pc() - s)
            f.conn.rollback()
        else:  # SQLite, PostgreSQL: the claim is one statement
            f.begin()
            s = pc()
            rows = [row for row in f.execute(f.q["jobs_claim"], CLAIM_PARAMS) if row[0] is not None]
            lat.append(pc() - s)
            f.conn.rollback()
            job = rows[0] if rows else None
        if job is None and not empty:
            raise RuntimeError("queue ran dry")
    f.close()
    return lat


def batchq_claims(backend: str, n: int, empty: bool = False) -> list[float]:
    import uuid

    from batchq import Queue
    from batchq.backends.liveness import owner_name

    q = Queue(url_for(backend), task_modules="noop_jobs")
    backend_ = q.backend
    backend_.conn  # noqa: B018 - connect before timing, as the floor does
    name = owner_name()
    lat = []
    pc = time.perf_counter
    for _ in range(n):
        token = uuid.uuid4().hex
        s = pc()
        claim = backend_.stores.jobs.claim("default", name, token)
        lat.append(pc() - s)
        if empty and not claim.jobs:
            continue
        if not claim.jobs:
            raise RuntimeError("queue ran dry")
        backend_.stores.jobs.delete_jobs(claim.jobs)
    q.close()
    return lat


def main() -> None:
    ap = parser(__doc__, quick={"big": 200_000, "claims": 300, "repeat": 1})
    ap.add_argument("--claims", type=int, default=1000, help="timed claims per system per repetition")
    ap.add_argument("--big", type=int, default=1_000_000, help="the large ready backlog")
    ap.add_argument(
        "--only", default="", help="comma-separated words: run only scenarios whose label has one"
    )
    args = parse(ap)
    if 2 * args.claims * args.repeat > 10_000:
        raise SystemExit("--claims x --repeat x 2 must stay below the 10,000 ready jobs")
    # The rolled-back claims take nothing, so only floor and batchq claims consume ready jobs.
    results = []
    plans = []
    for label, spec in scenarios(args.big):
        if args.only and not any(word in label for word in args.only.split(",")):
            continue
        secs = load(args.backend, **spec)
        print(f"# loaded {label} in {secs:.1f}s", file=sys.stderr, flush=True)
        plans.append((label, explain(args.backend)))
        p = {"floor": ([], []), "batchq": ([], []), "select": ([], [])}
        claims = min(args.claims, 20) if spec.get("slow") else args.claims
        for rep in range(args.repeat):
            for name, fn in (("floor", floor_claims), ("batchq", batchq_claims), ("select", select_only)):
                lat = fn(args.backend, claims, bool(spec.get("empty")))
                p[name][0].append(percentile(lat, 50) * 1e3)
                p[name][1].append(percentile(lat, 99) * 1e3)
                print(
                    f"# {label} rep {rep + 1} {name}: "
                    f"p50 {p[name][0][-1]:.3f} ms p99 {p[name][1][-1]:.3f} ms",
                    file=sys.stderr,
                    flush=True,
                )
        results.append((label, p))
    base = {
        name: (median(results[0][1][name][0]), median(results[0][1][name][1]))
        for name in ("floor", "batchq", "select")
    }
    rows = []
    for label, p in results:
        for name, shown in (
            ("floor", "raw-SQL floor claim (commit)"),
            ("batchq", "batchq `backend.stores.jobs.claim()` (commit)"),
            ("select", "claim statement alone, rolled back (no commit)"),
        ):
            p50s, p99s = p[name]
            rows.append(
                [
                    label,
                    shown,
                    med_range(p50s, "{:.3f}"),
                    med_range(p99s, "{:.3f}"),
                    f"{median(p99s) / base[name][1]:.2f}×",
                ]
            )
    info = server_info(args.backend)
    text = table(
        [
            "table holds",
            "claim by",
            "p50 ms median (min–max)",
            "p99 ms median (min–max)",
            "p99 ÷ p99 at 10,000 ready",
        ],
        rows,
    )
    text += (
        f"\n\n{args.claims:,} timed claims per system per repetition ({min(args.claims, 20)} in the "
        f"last two scenarios, whose claims are slow), {args.repeat} repetitions; each committed claim is "
        "acked (untimed) before the next; the rolled-back row times only the claim's SELECT (MySQL) or "
        "UPDATE ... RETURNING (SQLite, PostgreSQL), to show the index walk without the commit's fsync; "
        + ", ".join(f"{k}={v}" for k, v in info.items())
        + f".\nCommand: {command_line()}\n"
    )
    for label, plan in plans:
        text += f"\nClaim plan with {label}:\n\n{plan}\n"
    emit(f"scale: claim latency, {args.backend}", text, f"scale-{args.backend}")


if __name__ == "__main__":
    main()
