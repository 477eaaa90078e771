"""I/O-bound jobs: one `batchq run --concurrency N` against N `batchq run` processes and the peers,
jobs/s and peak memory; and no-op jobs before and after --concurrency (issue 27).

    .venv/bin/python bench/io_jobs.py --jobs 4000 --n 8 --repeat 2 [--part io|noop|all] \
        [--backends postgresql,mysql] [--systems batchq-lanes,pgqueuer] [--before /path/to/checkout] \
        [--noop-jobs 5000 --noop-repeat 3]

Part "io" (--jobs jobs per row). The jobs (bench/io_tasks.py): sleep_10ms (time.sleep(0.01)),
http_get (a GET to an HTTP server this process starts on 127.0.0.1, a port picked by the system:
a ThreadingHTTPServer whose handler sleeps 20 ms, one connection per job with http.client), and
the async ones: async_sleep_10ms (asyncio.sleep(0.01)) and async_http_get (the same GET on
asyncio.open_connection: no async HTTP client is added for it, see io_tasks.py). Rows:
  batchq, lanes  - one `python -m batchq run --max-procs-per-host 64 --concurrency N`;
  batchq, procs  - N `python -m batchq run --max-procs-per-host 64` (--concurrency 1: one job at
                   a time each), all four jobs; both on PostgreSQL and (sync jobs) on MariaDB;
  procrastinate  - one worker --one-shot --concurrency N, the async jobs (PostgreSQL);
  pgqueuer       - one `pgq run --mode drain --max-concurrent-tasks N --batch-size N/2`, the
                   async jobs (PostgreSQL), its worker on asyncpg (AsyncpgDriver): on psycopg's
                   PsycopgDriver a pre-loaded drain waits about a second per dequeue round
                   (io_peers.py says why);
  huey           - one `huey_consumer -w N -k thread` on SqlHuey, the sync jobs (MariaDB).
--systems picks rows by these names: batchq-lanes, batchq-procs, procrastinate, pgqueuer, huey
(default all of them; --no-peers keeps only the batchq ones).
The peers are set up as bench/peers.py and bench/huey_app.py set them up (io_peers.py says how
they run these jobs). Every queue is pre-loaded with --jobs jobs (batchq: enqueue_many of 1000
by a child process, then VACUUM (ANALYZE) / ANALYZE TABLE; untimed), then the workers are
started; the time runs from the first spawn until the system's queue holds no unfinished job
(polled every 20 ms on one open connection: batchq's rows are deleted when done, procrastinate's
counted in 'todo' and 'doing', pgqueuer's left in its queue table until the completion is
flushed; huey deletes a task when it takes it, so its last few jobs, at most N, may still run
when its count reaches 0). The workers then exit by themselves (huey: SIGINT), untimed.
Process start-up is inside every figure. "of ideal" is jobs/s over N / (the job's wait).

Memory: each worker process's peak resident set, the kernel's high-water mark VmHWM read from
/proc/PID/status every 20 ms until the process exits (a high-water mark: only growth in its last
20 ms could be missed); "all workers" is their sum, "per process" its median and range over the
processes. Not the ru_maxrss that wait4() returns: Linux folds into it the RSS of the process
that forked the worker (this one, before the exec), which here is larger than a small worker.
CPU: user + system of the worker processes, from the rusage os.wait4() returns for each, per job
(start-up included).

Part "noop" (--noop-jobs no-op jobs of bench/noop_jobs.py per row, one process): `batchq run`
(= --concurrency 1) on this checkout against the same on --before (a checkout of the code
before --concurrency, e.g. `git worktree add /tmp/before ea656c5` with `ln -s ../sql
batchq/sql` in it, run with PYTHONPATH pointing at it, on a database of its own named
<database>_old, its schema made by its own init_db), and `batchq run --concurrency 4`, in a
rotating order each repetition; the ratio is each repetition's own, against that repetition's
`batchq run`. Without --before the before row is left out.

Databases: BENCH_POSTGRESQL_URL and BENCH_MYSQL_URL (settings.py; peers in <database>_procrastinate
and <database>_pgqueuer, huey's tables in the MariaDB database itself). The HTTP server and the
polling run in this process, on the same 2 cores as the workers: the same for every row.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import io_tasks
from machine import machine_info, server_info
from procs import compile_batchq
from report import command_line, emit, table
from settings import BENCH_DIR, PYTHON, REPO_DIR, bench_env, url_for
from stats import med_range, median

POLL = 0.02  # seconds between "is the queue empty yet" checks
EXIT_TIMEOUT = 60.0  # seconds a worker may take to exit once its queue is empty
BATCHQ_RUN = ["-m", "batchq", "run", "--max-procs-per-host", "64"]
BACKEND_NAMES = {"postgresql": "PostgreSQL", "mysql": "MariaDB"}
# --systems: the rows of the io part, by the names this option takes (the peers run on the
# backend they have: procrastinate and pgqueuer on PostgreSQL, huey on MariaDB).
SYSTEMS = ("batchq-lanes", "batchq-procs", "procrastinate", "pgqueuer", "huey")


# -- the HTTP server the http jobs call ------------------------------------------------------


class SlowHandler(BaseHTTPRequestHandler):
    """Every GET sleeps io_tasks.SERVER_SLEEP_SECONDS, then answers 200 'ok' (HTTP/1.0: the
    connection closes after it)."""

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        time.sleep(io_tasks.SERVER_SLEEP_SECONDS)
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # N processes connect at once: the default backlog of 5 would drop SYNs


def start_server() -> tuple[Server, str]:
    server = Server(("127.0.0.1", 0), SlowHandler)
    threading.Thread(target=server.serve_forever, name="io-http", daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}/"


# -- databases -------------------------------------------------------------------------------


def suffixed(url: str, suffix: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{parts.path}_{suffix}"))


def connect(url: str) -> Any:
    """A raw autocommit connection (psycopg or PyMySQL) to a benchmark URL."""
    parts = urlsplit(url)
    if parts.scheme.startswith("postgres"):
        import psycopg

        return psycopg.connect(url, autocommit=True)
    import pymysql

    return pymysql.connect(
        host=parts.hostname,
        port=parts.port or 3306,
        user=parts.username or "root",
        password=parts.password or "",
        database=parts.path.lstrip("/"),
        autocommit=True,
    )


def ensure_database(url: str) -> None:
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if parts.scheme.startswith("postgres"):
        import peers

        peers.ensure_database(url)
    else:
        conn = connect(urlunsplit(parts._replace(path="/mysql")))
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{name}`")
        conn.close()


class Counter:
    """One open connection that counts a queue's unfinished jobs."""

    def __init__(self, url: str, sql: str) -> None:
        self.conn = connect(url)
        self.sql = sql

    def __call__(self) -> int:
        cur = self.conn.cursor()
        cur.execute(self.sql)
        (n,) = cur.fetchone()
        cur.close()
        return int(n)

    def close(self) -> None:
        self.conn.close()


def load_batchq(tree: str, url: str, task: str, n: int) -> None:
    """Empty batchq's job table at ``url`` and enqueue ``n`` jobs of ``task`` with enqueue_many,
    in a child process that runs the batchq of ``tree`` (its own schema, its own init_db)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, str(BENCH_DIR)]))
    cmd = [PYTHON, __file__, "--child-load", url, task, str(n)]
    subprocess.run(cmd, env=env, cwd=REPO_DIR, check=True)


def _child_load(url: str, task: str, n: int) -> None:
    from batchq import Queue

    queue = Queue(url, task_modules=[task.split(":")[0]])
    queue.init_db()
    conn = connect(url)
    postgresql = url.startswith("postgres")
    cur = conn.cursor()
    cur.execute("TRUNCATE TABLE batchq_job" + (" RESTART IDENTITY" if postgresql else ""))
    cur.execute("DELETE FROM batchq_queue")
    for lo in range(0, n, 1000):
        queue.enqueue_many(task, [{"i": i} for i in range(lo, min(n, lo + 1000))])
    queue.close()
    cur.execute("VACUUM (ANALYZE) batchq_job" if postgresql else "ANALYZE TABLE batchq_job")
    if not postgresql:
        cur.fetchall()
    cur.close()
    conn.close()


# -- one drain -------------------------------------------------------------------------------


@dataclass
class Drain:
    wall: float
    rss_kib: list[int]  # each worker process's peak RSS (VmHWM)
    cpu: float  # user + system seconds, all worker processes


def drain(
    cmds: Sequence[Sequence[str]],
    env: dict[str, str],
    pending: Callable[[], int],
    *,
    stop: Callable[[subprocess.Popen], None] | None = None,
    timeout: float = 600,
    cwd: str = str(REPO_DIR),
) -> Drain:
    """Start every command at once (in ``cwd``: `python -m batchq` imports batchq from there
    before PYTHONPATH); time until ``pending()`` is 0; then let them exit (``stop`` them if they
    do not by themselves) and read each one's rusage as it is reaped."""
    usage: dict[int, Any] = {}
    hwm: dict[int, int] = {}

    def reap(procs: list[subprocess.Popen], block: bool) -> None:
        for p in procs:
            if p.pid in usage:
                continue
            hwm[p.pid] = max(hwm.get(p.pid, 0), high_water_kib(p.pid))
            pid, status, rusage = os.wait4(p.pid, 0 if block else os.WNOHANG)
            if pid:
                usage[p.pid] = rusage
                p.returncode = os.waitstatus_to_exitcode(status)

    t0 = time.perf_counter()
    procs = [subprocess.Popen(list(c), env=env, cwd=cwd, stdout=subprocess.DEVNULL) for c in cmds]
    try:
        while pending() > 0:
            reap(procs, block=False)
            if len(usage) == len(procs) and pending() > 0:
                codes = [p.returncode for p in procs]
                raise RuntimeError(f"{_shown(cmds[0])}: the workers exited ({codes}) with jobs left")
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError(f"{_shown(cmds[0])}: timed out")
            time.sleep(POLL)
        wall = time.perf_counter() - t0
        if stop is not None:
            for p in procs:
                if p.pid not in usage:
                    stop(p)
        deadline = time.perf_counter() + EXIT_TIMEOUT
        while len(usage) < len(procs):
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{_shown(cmds[0])}: a worker did not exit on an empty queue")
            reap(procs, block=False)
            time.sleep(POLL)
    finally:
        for p in procs:
            if p.pid not in usage:
                p.kill()
                reap([p], block=True)
    bad = [p.returncode for p in procs if p.returncode not in (0, -signal.SIGINT)]
    if bad:
        raise RuntimeError(f"{_shown(cmds[0])}: exit status {bad}")
    return Drain(
        wall=wall,
        rss_kib=[hwm.get(p.pid, 0) for p in procs],
        cpu=sum(usage[p.pid].ru_utime + usage[p.pid].ru_stime for p in procs),
    )


def high_water_kib(pid: int) -> int:
    """VmHWM of a live process, KiB (0 once it has exited: a zombie has no memory left)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _shown(cmd: Sequence[str]) -> str:
    return " ".join(os.path.basename(str(part)) for part in cmd[:6])


# -- the rows ------------------------------------------------------------------------------


@dataclass
class Row:
    backend: str
    system: str  # shown
    job: str
    procs: int
    jobs: int
    run: Callable[[], Drain]
    drains: list[Drain] = field(default_factory=list)


def batchq_env(backend: str, tree: str, url: str, modules: str, extra: dict[str, str]) -> dict[str, str]:
    env = bench_env(backend, **extra)
    env["PYTHONPATH"] = os.pathsep.join([tree, str(BENCH_DIR)])
    env["BATCHQ_URL"] = url
    env["BATCHQ_TASK_MODULES"] = modules
    return env


def batchq_drain(
    backend: str,
    task: str,
    jobs: int,
    procs: int,
    concurrency: int,
    *,
    tree: str = str(REPO_DIR),
    url: str | None = None,
    modules: str = "io_tasks",
    extra: dict[str, str] | None = None,
) -> Drain:
    url = url or url_for(backend)
    load_batchq(tree, url, task, jobs)
    flags = ["--concurrency", str(concurrency)] if concurrency > 1 else []
    cmd = [PYTHON, *BATCHQ_RUN, *flags]
    counter = Counter(url, "SELECT count(*) FROM batchq_job")
    try:
        env = batchq_env(backend, tree, url, modules, extra or {})
        return drain([cmd] * procs, env, counter, cwd=tree)  # the tree's batchq, not this one
    finally:
        counter.close()


def peer_drain(peer: Any, task: str, jobs: int, n: int, extra: dict[str, str]) -> Drain:
    peer.setup()
    peer.reset()
    peer.preload_task(task, jobs)
    counter = Counter(peer.url, peer.pending_sql)
    try:
        if counter() != jobs:
            raise RuntimeError(f"{peer.name}: preload failed")
        result = drain([peer.io_worker_cmd(n)], bench_env("postgresql", **extra), counter)
    finally:
        counter.close()
    if peer.failed():
        raise RuntimeError(f"{peer.name}: {peer.failed()} jobs did not succeed")
    return result


def huey_drain(task: str, jobs: int, n: int, extra: dict[str, str]) -> Drain:
    import io_peers

    io_peers.huey_preload(task, jobs)
    counter = Counter(url_for("mysql"), "SELECT count(*) FROM task")
    try:
        if counter() != jobs:
            raise RuntimeError("huey: preload failed")
        env = bench_env("mysql", BENCH_HUEY="mysql-sql", **extra)
        return drain([io_peers.huey_worker_cmd(n)], env, counter, stop=lambda p: p.send_signal(signal.SIGINT))
    finally:
        counter.close()


def io_rows(
    backends: Sequence[str],
    jobs: int,
    n: int,
    systems: Sequence[str],
    extra: dict[str, str],
) -> list[Row]:
    """The io part's rows: those of ``systems`` (names from SYSTEMS) on each of ``backends``."""
    import io_peers

    rows: list[Row] = []
    for backend in backends:
        kinds = io_tasks.SYNC + io_tasks.ASYNC if backend == "postgresql" else io_tasks.SYNC
        for kind in kinds:
            task = f"io_tasks:{kind}"
            if "batchq-lanes" in systems:
                rows.append(
                    Row(
                        backend,
                        f"batchq: 1 process × `--concurrency {n}`",
                        kind,
                        1,
                        jobs,
                        lambda b=backend, t=task: batchq_drain(b, t, jobs, 1, n, extra=extra),
                    )
                )
            if "batchq-procs" in systems:
                rows.append(
                    Row(
                        backend,
                        f"batchq: {n} processes × `batchq run`",
                        kind,
                        n,
                        jobs,
                        lambda b=backend, t=task: batchq_drain(b, t, jobs, n, 1, extra=extra),
                    )
                )
        if backend == "postgresql" and "procrastinate" in systems:
            procrastinate = io_peers.Procrastinate()
            label = f"procrastinate: 1 worker `--concurrency {n}`"
            rows += one_process_rows(
                backend, label, io_tasks.ASYNC, partial(peer_drain, procrastinate), jobs, n, extra
            )
        if backend == "postgresql" and "pgqueuer" in systems:
            batch = max(1, n // 2)
            label = f"pgqueuer: 1 `pgq run --max-concurrent-tasks {n} --batch-size {batch}`"
            pgqueuer = io_peers.PgQueuer(batch_size=batch)
            rows += one_process_rows(
                backend, label, io_tasks.ASYNC, partial(peer_drain, pgqueuer), jobs, n, extra
            )
        if backend == "mysql" and "huey" in systems:
            label = f"huey: 1 consumer `-k thread -w {n}`"
            rows += one_process_rows(backend, label, io_tasks.SYNC, huey_drain, jobs, n, extra)
    return rows


def one_process_rows(
    backend: str,
    label: str,
    kinds: Sequence[str],
    drain_kind: Callable[..., Drain],
    jobs: int,
    n: int,
    extra: dict[str, str],
) -> list[Row]:
    """A peer's rows, one per job kind, each one process: ``drain_kind(kind, jobs, n, extra)``."""
    return [Row(backend, label, kind, 1, jobs, partial(drain_kind, kind, jobs, n, extra)) for kind in kinds]


def describe(tree: str) -> str:
    """A checkout's short commit, or its path."""
    found = subprocess.run(
        ["git", "-C", tree, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return found.stdout.strip() or tree


def noop_rows(backends: Sequence[str], jobs: int, before: str | None) -> list[Row]:
    rows: list[Row] = []
    now = describe(str(REPO_DIR))
    task = "noop_jobs:noop"
    for backend in backends:
        if before:
            old_url = suffixed(url_for(backend), "old")
            ensure_database(old_url)
            rows.append(
                Row(
                    backend,
                    f"before ({describe(before)}): `batchq run`",
                    "noop",
                    1,
                    jobs,
                    lambda b=backend, u=old_url: batchq_drain(
                        b, task, jobs, 1, 1, tree=before, url=u, modules="noop_jobs"
                    ),
                )
            )
        rows.append(
            Row(
                backend,
                f"now ({now}): `batchq run` (= `--concurrency 1`)",
                "noop",
                1,
                jobs,
                lambda b=backend: batchq_drain(b, task, jobs, 1, 1, modules="noop_jobs"),
            )
        )
        rows.append(
            Row(
                backend,
                f"now ({now}): `batchq run --concurrency 4`",
                "noop",
                1,
                jobs,
                lambda b=backend: batchq_drain(b, task, jobs, 1, 4, modules="noop_jobs"),
            )
        )
    return rows


def run_rounds(rows: list[Row], repeat: int) -> None:
    """Every row once per round, the order rotated by one each round (and reversed every other)."""
    for round_ in range(repeat):
        shift = round_ % len(rows)
        order = rows[shift:] + rows[:shift]
        if round_ % 2:
            order.reverse()
        for row in order:
            d = row.run()
            row.drains.append(d)
            print(
                f"# round {round_ + 1} {row.backend} {row.system} {row.job}: {d.wall:.2f}s = "
                f"{row.jobs / d.wall:,.0f} jobs/s, peak RSS {sum(d.rss_kib) / 1024:.0f} MB, "
                f"load {os.getloadavg()[0]:.2f}",
                file=sys.stderr,
                flush=True,
            )


def _mb(kib: float) -> str:
    return f"{kib / 1024:.0f}"


def memory_cells(row: Row) -> list[str]:
    sums = [sum(d.rss_kib) for d in row.drains]
    each = [k for d in row.drains for k in d.rss_kib]
    per = (
        _mb(median(each))
        if min(each) == max(each)
        else f"{_mb(median(each))} ({_mb(min(each))}–{_mb(max(each))})"
    )
    return [_mb(median(sums)), per]


def io_table(rows: list[Row], n: int) -> str:
    out = []
    for row in rows:
        rates = [row.jobs / d.wall for d in row.drains]
        ideal = n / io_tasks.SECONDS[row.job]
        cpu = median([d.cpu / row.jobs * 1e3 for d in row.drains])
        out.append(
            [
                BACKEND_NAMES[row.backend],
                row.system,
                f"`{row.job}`",
                f"{row.jobs:,}",
                med_range(rates),
                f"{median(rates) / ideal:.0%}",
                *memory_cells(row),
                f"{cpu:.2f}",
            ]
        )
    return table(
        [
            "database",
            "workers",
            "job",
            "jobs",
            "jobs/s median (min–max)",
            "of ideal",
            "peak RSS, all workers (MB)",
            "peak RSS per process (MB)",
            "worker CPU ms/job",
        ],
        out,
    )


def noop_table(rows: list[Row], jobs: int) -> str:
    out = []
    for backend in dict.fromkeys(r.backend for r in rows):
        mine = [r for r in rows if r.backend == backend]
        base = next(r for r in mine if r.system.startswith("now (") and "=" in r.system)
        for row in mine:
            rates = [jobs / d.wall for d in row.drains]
            ratios = [base_d.wall / d.wall for base_d, d in zip(base.drains, row.drains)]
            out.append(
                [
                    BACKEND_NAMES[row.backend],
                    row.system,
                    med_range(rates),
                    "" if row is base else med_range(ratios, "{:.2f}×"),
                    *memory_cells(row)[:1],
                    f"{median([d.cpu / jobs * 1e3 for d in row.drains]):.3f}",
                ]
            )
    return table(
        [
            "database",
            "worker (1 process)",
            "jobs/s median (min–max)",
            "÷ now `batchq run`, per round",
            "peak RSS (MB)",
            "worker CPU ms/job",
        ],
        out,
    )


def settings_note(backends: Sequence[str]) -> str:
    parts = []
    for backend in backends:
        info = server_info(backend)
        parts.append(f"{BACKEND_NAMES[backend]}: " + ", ".join(f"{k}={v}" for k, v in info.items()))
    machine = ", ".join(f"{k}={v}" for k, v in machine_info().items())
    return "; ".join(parts) + f"; machine: {machine}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=4000, help="I/O-bound jobs per row (default %(default)s)")
    ap.add_argument(
        "--n",
        type=int,
        default=8,
        help="jobs at once: lanes, processes, peer concurrency (default %(default)s)",
    )
    ap.add_argument("--repeat", type=int, default=2, help="rounds of the io part (default %(default)s)")
    ap.add_argument("--part", choices=("io", "noop", "all"), default="all")
    ap.add_argument("--backends", default="postgresql,mysql", help="default %(default)s")
    ap.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help="the io part's rows, a comma-separated subset of %(default)s (default: all); each peer "
        "runs on its own database only (procrastinate, pgqueuer: postgresql; huey: mysql)",
    )
    ap.add_argument("--no-peers", action="store_true", help="batchq rows only (no peer of --systems)")
    ap.add_argument("--before", help="a checkout of batchq before --concurrency (ea656c5), for the noop part")
    ap.add_argument("--noop-jobs", type=int, default=5000, help="no-op jobs per row (default %(default)s)")
    ap.add_argument(
        "--noop-repeat", type=int, default=3, help="rounds of the noop part (default %(default)s)"
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: --jobs 200 --noop-jobs 500, one round each",
    )
    ap.add_argument("--child-load", nargs=3, metavar=("URL", "TASK", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_load:
        url, task, n = args.child_load
        _child_load(url, task, int(n))
        return
    if args.quick:
        args.jobs, args.noop_jobs, args.repeat, args.noop_repeat = 200, 500, 1, 1
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for backend in backends:
        if backend not in BACKEND_NAMES:
            raise SystemExit(f"--backends: {backend!r} is not one of {', '.join(BACKEND_NAMES)}")
        url_for(backend)  # refuses test databases
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    for system in systems:
        if system not in SYSTEMS:
            raise SystemExit(f"--systems: {system!r} is not one of {', '.join(SYSTEMS)}")
    if args.no_peers:
        systems = [s for s in systems if s.startswith("batchq")]
    if "mysql" in backends:
        os.environ["BENCH_HUEY"] = "mysql-sql"
        os.environ["BENCH_HUEY_MYSQL_DB"] = urlsplit(url_for("mysql")).path.lstrip("/")
    compile_batchq()
    if args.before:
        subprocess.run([PYTHON, "-m", "compileall", "-q", os.path.join(args.before, "batchq")], check=True)
    load = [f"{x:.2f}" for x in os.getloadavg()]
    if args.part in ("io", "all"):
        server, base_url = start_server()
        extra = {"BENCH_IO_URL": base_url, "BENCH_HUEY_MYSQL_DB": os.environ.get("BENCH_HUEY_MYSQL_DB", "")}
        rows = io_rows(backends, args.jobs, args.n, systems, extra)
        run_rounds(rows, args.repeat)
        server.shutdown()
        text = io_table(rows, args.n)
        text += (
            f"\n\n{args.jobs:,} jobs per row, N = {args.n}, {args.repeat} rounds (order rotated); "
            f"ideal = N / the job's wait (sleep 10 ms: {args.n / 0.01:,.0f} jobs/s; HTTP 20 ms: "
            f"{args.n / 0.02:,.0f} jobs/s). Load average before: {' '.join(load)}, after: "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}.\n{settings_note(backends)}.\n"
            f"Command: {command_line()}"
        )
        emit(f"I/O-bound jobs, N = {args.n}", text, "io_jobs")
    if args.part in ("noop", "all"):
        load = [f"{x:.2f}" for x in os.getloadavg()]
        rows = noop_rows(backends, args.noop_jobs, args.before)
        run_rounds(rows, args.noop_repeat)
        text = noop_table(rows, args.noop_jobs)
        text += (
            f"\n\n{args.noop_jobs:,} no-op jobs per row, one process, {args.noop_repeat} rounds (order "
            f"rotated); before = {args.before or '(not run)'}. Load average before: {' '.join(load)}, "
            f"after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}.\nCommand: {command_line()}"
        )
        emit("No-op jobs: before --concurrency, --concurrency 1 and 4", text, "io_jobs-noop")


if __name__ == "__main__":
    main()
