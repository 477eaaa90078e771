"""Pure-Python parts: URLs, durations, serializers, task resolution, backoff, query files."""

from __future__ import annotations

import datetime

import pytest
from freezegun import freeze_time

from batchq import ConfigError, PayloadError, SignatureError, TaskError, TaskNotAllowed
from batchq.config import parse_duration, parse_url
from batchq.serializers import dumps, loads
from batchq.sqlfiles import queries
from batchq.tasks import Resolver
from batchq.worker import retry_delay


def test_urls() -> None:
    url = parse_url("mysql://app:p%40ss@db.example:3307/jobs?connect_timeout=3")
    assert (url.dialect, url.host, url.port, url.user, url.password, url.database) == (
        "mysql",
        "db.example",
        3307,
        "app",
        "p@ss",
        "jobs",
    )
    assert url.options == {"connect_timeout": "3"}
    assert "p@ss" not in str(url) and "p@ss" not in repr(url)
    assert str(url) == "mysql://app:***@db.example:3307/jobs"
    assert parse_url("postgres://u@h/d").dialect == "postgresql"
    assert parse_url("sqlite:////tmp/x.db").database == "/tmp/x.db"
    assert parse_url("sqlite:///rel.db").database == "rel.db"


@pytest.mark.parametrize(
    "bad", ["", "mysql", "redis://h/0", "mysql://h", "sqlite://x.db", "mysql://u:pw@:3/d"]
)
def test_bad_urls_name_the_fix_without_the_password(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_url(bad)
    assert "pw" not in str(info.value)


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("90", 90),
        ("90s", 90),
        ("15m", 900),
        ("1h30m", 5400),
        ("2d", 172800),
        ("250ms", 0.25),
        (5, 5),
        ("1.5h", 5400),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["soon", "1x", "-5", "5 parsecs", "", float("inf"), -1])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(ConfigError, match="bad duration"):
        parse_duration(bad)  # type: ignore[arg-type]


def test_json_and_signed_pickle() -> None:
    assert loads(dumps({"a": "é🎉"}, "json", None), "json", None) == {"a": "é🎉"}
    data = dumps({"when": datetime.date(2026, 1, 1)}, "pickle", b"k")
    assert loads(data, "pickle", b"k") == {"when": datetime.date(2026, 1, 1)}
    with pytest.raises(SignatureError):
        loads(data, "pickle", b"other key")
    with pytest.raises(SignatureError):
        loads(data[32:], "pickle", b"k")  # unsigned
    with pytest.raises(PayloadError):
        dumps(object(), "json", None)


def test_refused_modules_are_never_imported() -> None:
    import sys

    resolver = Resolver(["jobs"])
    for name in ("antigravity:x", "this:x", "os:system"):
        with pytest.raises(TaskNotAllowed):
            resolver.resolve(name)
    assert "antigravity" not in sys.modules and "this" not in sys.modules


def test_prefixes_match_whole_module_names() -> None:
    resolver = Resolver(["myapp.*"])
    assert resolver.module_allowed("myapp") and resolver.module_allowed("myapp.jobs")
    assert not resolver.module_allowed("myappevil")
    with pytest.raises(TaskError, match="bad task name"):
        resolver.resolve("myapp.jobs:f; rm -rf /")


def test_backoff_schedule_doubles_and_caps() -> None:
    assert [retry_delay(n) for n in range(1, 6)] == [10, 20, 40, 80, 160]
    assert retry_delay(30) == 3600
    assert retry_delay(3, base=1) == 4


@freeze_time("2030-01-01 00:00:00")
def test_backoff_does_not_read_the_app_clock() -> None:
    """Due times are computed on the database server; the app clock only supplies a delay."""
    assert retry_delay(2) == 20


def test_query_names_match_across_dialects() -> None:
    core = {
        "session_setup",
        "schema_version",
        "schema_version_set",
        "enqueue",
        "jobs_promote",
        "jobs_claim",
        "jobs_delete",
        "job_error",
        "release_unknown_claims",
        "job_cancel",
        "queue_stats",
        "processing_jobs",
        "requeue_abandoned",
        "failed_jobs",
        "requeue_failed",
        "delete_failed",
        "queue_set_paused",
        "paused_queues",
        "purge_queue",
        "jobs_release",
    }
    for dialect in ("mysql", "sqlite", "postgresql"):
        missing = core - set(queries(dialect))
        assert not missing, f"{dialect} lacks {missing}"
