"""Pure-Python parts: URLs, durations, serializers, task resolution, backoff, query files."""

from __future__ import annotations

import datetime
import sys

import pytest
from freezegun import freeze_time

from batchq import ConfigError, PayloadError, SignatureError, TaskError, TaskNotAllowed
from batchq.core.config import DEFAULT_LEASE_SECONDS, driver_options, lease_seconds, parse_duration, parse_url
from batchq.core.serializers import dumps, loads
from batchq.jobs.tasks import Resolver
from batchq.runtime.worker import BACKOFF_MAX_SECONDS, retry_delay


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


def test_postgresql_multi_host_urls() -> None:
    """libpq's failover form: hosts tried in turn, the first that takes writes kept."""
    url = parse_url("postgresql://app:s3cret@db1:5433,[::1],db3:6000/jobs?target_session_attrs=read-write")
    assert url.hosts == (("db1", 5433), ("::1", None), ("db3", 6000))
    assert (url.host, url.port, url.options) == ("db1", 5433, {"target_session_attrs": "read-write"})
    assert str(url) == "postgresql://app:***@db1:5433,[::1],db3:6000/jobs"
    assert parse_url("postgresql://h/d?pgbouncer=transaction").options == {"pgbouncer": "transaction"}


def test_pgbouncer_in_transaction_mode_means_leases_and_no_libpq_option() -> None:
    url = parse_url("postgresql://u@h/d?pgbouncer=transaction&connect_timeout=3")
    assert lease_seconds(url) == DEFAULT_LEASE_SECONDS
    assert lease_seconds(parse_url("postgresql://u@h/d?pgbouncer=transaction&lease=5s")) == 5
    assert lease_seconds(parse_url("postgresql://u@h/d?pgbouncer=session")) is None
    assert driver_options(url) == {"connect_timeout": "3"}  # libpq would refuse pgbouncer=


@pytest.mark.parametrize(
    "bad, needle",
    [
        ("postgresql://u:pw@a/db?pgbouncer=transaction&liveness=session", "leave liveness out"),
        ("mysql://root@a:1,b:2/db", "PostgreSQL's form"),  # one server for MySQL
        ("postgresql://u:pw@a,,b/db", "host1:port1,host2:port2"),  # an empty entry
        ("postgresql://u:pw@a:1,b:x/db", "bad port 'x'"),
        ("postgresql://u:pw@a/db?target_session_attrs=rw", "read-write"),
        ("postgresql://u:pw@a/db?pgbouncer=yes", "transaction"),
    ],
)
def test_bad_multi_host_urls_and_pooler_options_say_the_fix(bad: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle) as info:
        parse_url(bad)
    assert "pw" not in str(info.value)


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


@pytest.mark.parametrize(
    "stored, value",
    [
        (b'{"i":1}', {"i": 1}),
        (b' {"i": 1}\n', {"i": 1}),
        (b"[]", []),
        (b"null", None),
        (b'"\xc3\xa9"', "\u00e9"),
    ],
)
def test_json_payloads_read_as_json_loads_reads_them(stored: bytes, value: object) -> None:
    """Stored by batchq (nothing around the document) or by hand (whitespace around it)."""
    assert loads(stored, "json", None) == value


@pytest.mark.parametrize(
    "stored", [b"", b"{", b'{"i":1}x', b'{"i":1} 2', b"\xef\xbb\xbf{}", b"[1,]", b"NaNx"]
)
def test_json_payloads_that_are_not_one_document_are_refused(stored: bytes) -> None:
    with pytest.raises(PayloadError, match="not valid JSON"):
        loads(stored, "json", None)


def test_refused_modules_are_never_imported() -> None:
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


def test_backoff_never_overflows() -> None:
    for count in (1025, 1100, 65534, 65535, 65536, 10**9):
        assert retry_delay(count) == BACKOFF_MAX_SECONDS
    assert retry_delay(65535, base=1e-300) == BACKOFF_MAX_SECONDS  # a tiny base still reaches the cap
    assert retry_delay(60, base=1e-15) == pytest.approx(1e-15 * 2**59)
    assert retry_delay(65535, base=0) == 0
    assert [retry_delay(n) for n in range(1, 6)] == [10, 20, 40, 80, 160]
