"""The cost of one enqueue through Django's Tasks framework on batchq (issue 24), against
batchq's own enqueue on the same Django connection.

    .venv/bin/python bench/django_enqueue.py --backend mysql|sqlite|postgresql --jobs 2000 --repeat 3

Django 5.2 is configured in this process with DATABASES["default"] on the backend's benchmark
database (MySQL through mysqlclient, as Django has it) and TASKS["default"] a BatchqBackend on
it. Each row enqueues --jobs jobs inside transaction.atomic() blocks of 100 (the commit is not
timed), one call timed at a time, and reports the median and p99 per call in microseconds:
  Queue.enqueue(conn=connection): batchq's API, the job "noop_jobs:noop" with {"i": i}.
  task.enqueue(i):                Django's API: checks the Task, turns its arguments into JSON,
                                  builds the TaskResult and sends task_enqueued, around the same
                                  INSERT (keep_result set: the job keeps its outcome a day).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

import django
from django.conf import settings as django_settings

from loads import reset
from options import parse, parser
from report import command_line, emit, table
from settings import BENCH_DIR, TASK, url_for
from stats import median, percentile

BLOCK = 100  # jobs per app transaction


def configure(url: str) -> None:
    from batchq.core.config import parse_url

    parsed = parse_url(url)
    if parsed.dialect == "sqlite":
        database: dict[str, Any] = {"ENGINE": "django.db.backends.sqlite3", "NAME": parsed.database}
    else:
        engine = "mysql" if parsed.dialect == "mysql" else "postgresql"
        database = {
            "ENGINE": f"django.db.backends.{engine}",
            "NAME": parsed.database,
            "USER": parsed.user or ("root" if engine == "mysql" else "postgres"),
            "PASSWORD": parsed.password or "",
            "HOST": parsed.host,
            "PORT": str(parsed.port or ""),
        }
    django_settings.configure(
        DATABASES={"default": database},
        INSTALLED_APPS=["batchq.contrib.django"],
        TASKS={"default": {"BACKEND": "batchq.contrib.django.BatchqBackend"}},
        USE_TZ=True,
    )
    django.setup()


def timed(jobs: int, call: Callable[[int], Any]) -> list[float]:
    from django.db import transaction

    seconds = []
    for start in range(0, jobs, BLOCK):
        with transaction.atomic():
            for i in range(start, min(start + BLOCK, jobs)):
                begun = time.perf_counter()
                call(i)
                seconds.append(time.perf_counter() - begun)
    return seconds


def main() -> None:
    args = parse(parser(__doc__, jobs=2000, quick={"jobs": 300, "repeat": 1}))
    sys.path.insert(0, str(BENCH_DIR))
    os.environ["BATCHQ_TASK_MODULES"] = "noop_jobs"
    url = url_for(args.backend)
    configure(url)
    from django.db import connection

    from batchq import Queue

    from noop_tasks import noop

    queue = Queue(url)
    rows = {
        "Queue.enqueue(conn=connection)": lambda i: queue.enqueue(TASK, {"i": i}, conn=connection),
        "task.enqueue(i)": lambda i: noop.enqueue(i),
    }
    found: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.repeat):
        for name, call in rows.items():
            reset(args.backend)
            found[name] += timed(args.jobs, call)
    base = median(found["Queue.enqueue(conn=connection)"])
    lines = [
        [name, f"{median(s) * 1e6:.0f}", f"{percentile(s, 99) * 1e6:.0f}", f"{median(s) / base:.2f}x"]
        for name, s in found.items()
    ]
    text = table(["enqueue", "median us", "p99 us", "vs batchq's"], lines)
    title = f"Django Tasks enqueue, {args.backend}"
    emit(title, f"{command_line()}\n\n{text}", f"django_enqueue_{args.backend}")


if __name__ == "__main__":
    main()
