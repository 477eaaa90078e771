"""Input that once slipped past batchq's checks, without a database (issue 9, items 2, 3, 13):
slot keys, passwords with special characters in URLs, redaction, durations."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from batchq import ConfigError
from batchq.core.config import driver_options, lease_seconds, parse_duration, parse_url, redact


def test_slot_key_is_the_resolved_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from batchq.coordination.slots import database_key

    monkeypatch.chdir(tmp_path)
    here = database_key(parse_url("sqlite:///jobs.db"))
    assert here == database_key(parse_url(f"sqlite:///{tmp_path}/./jobs.db"))
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    assert database_key(parse_url("sqlite:///jobs.db")) != here
    # Servers: dialect, host, port (default filled in) and database; not the user or the spelling.
    same = [
        "mysql://app:pw@DB.example/jobs",
        "mysql://other@db.example:3306/jobs",
        "mariadb://app@db.example:3306/jobs?connect_timeout=3",
    ]
    assert len({database_key(parse_url(url)) for url in same}) == 1
    different = [
        "mysql://app@db.example:3306/jobs",
        "mysql://app@db.example:3307/jobs",
        "mysql://app@db.example/jobs2",
        "mysql://app@db2.example/jobs",
        "postgresql://app@db.example:3306/jobs",
    ]
    assert len({database_key(parse_url(url)) for url in different}) == len(different)
    assert database_key(parse_url("postgres://u@h/d")) == database_key(parse_url("postgresql://h:5432/d"))


# -- item 3: passwords with special characters -------------------------------------------

PASSWORDS = ["a", "p/ss", "p#ss", "p?ss", "p@ss", "1234/SECRET", "p@ss/w?rd#x:y"]


@pytest.mark.parametrize("scheme", ["mysql", "postgresql"])
@pytest.mark.parametrize("password", PASSWORDS)
def test_password_with_special_characters_parses(scheme: str, password: str) -> None:
    url = parse_url(f"{scheme}://app:{password}@db.example:3307/jobs?connect_timeout=3")
    assert (url.user, url.password, url.host, url.port, url.database) == (
        "app",
        password,
        "db.example",
        3307,
        "jobs",
    )
    assert url.options == {"connect_timeout": "3"}
    assert str(url) == f"{scheme}://app:***@db.example:3307/jobs"


def test_redaction_masks_the_password_not_every_letter() -> None:
    url = parse_url("mysql://app:a@h/db")
    text = f"cannot reach {url}: Can't connect to a server at 'h'"
    assert redact(text, url) == text.replace(" a ", " *** ")
    tricky = parse_url("mysql://app:db@h/db")
    assert redact(f"cannot use {tricky}: password db refused", tricky) == (
        "cannot use mysql://app:***@h/db: password *** refused"
    )
    long = parse_url("postgresql://app:1234%2FSECRET@h/db")
    assert long.password == "1234/SECRET"
    assert "SECRET" not in redact("bad conninfo password=1234/SECRET host=h", long)
    assert "SECRET" not in redact("bad conninfo password=1234%2FSECRET host=h", long)


@pytest.mark.parametrize("url", ["mysql://root@h/x?connect_timeout=abc", "mysql://root@a..b/db"])
def test_bad_url_options_and_hosts_are_refused_at_parse_time(url: str) -> None:
    with pytest.raises(ConfigError):
        parse_url(url)


@pytest.mark.parametrize(
    "url, problem",
    [
        ("mysql://root@h/x?liveness=leases", "bad liveness 'leases'"),
        ("postgresql://h/x?liveness=lease&lease=1s", "bad lease '1s'"),
        ("postgresql://h/x?liveness=lease&lease=soon", "bad lease in the URL"),
        ("mysql://root@h/x?liveness=lease&lease=2d", "bad lease '2d'"),
    ],
)
def test_bad_liveness_options_are_refused_with_the_fix(url: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_url(url)


def test_lease_options_are_batchqs_own_and_never_reach_the_driver() -> None:
    url = parse_url("postgresql://h/x?liveness=lease&lease=10s&target_session_attrs=read-write")
    assert lease_seconds(url) == 10.0
    assert driver_options(url) == {"target_session_attrs": "read-write"}
    assert lease_seconds(parse_url("mysql://root@h/x?liveness=lease")) == 30.0
    assert lease_seconds(parse_url("mysql://root@h/x?lease=10s")) is None  # sessions unless asked


@pytest.mark.parametrize(
    "value, seconds",
    [
        (None, 0.0),
        (5, 5.0),
        (2.5, 2.5),
        (Decimal("1.5"), 1.5),
        ("90s", 90.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        (timedelta(minutes=2), 120.0),
    ],
    ids=repr,
)
def test_one_duration_parser(value: Any, seconds: float) -> None:
    """The job queue and the message queue take the same delays: config.parse_duration's."""
    import batchq.jobs.jobspec
    import batchq.mq.archive
    import batchq.mq.checks
    import batchq.mq.reading
    import batchq.queue
    from batchq.core.config import parse_when

    assert parse_duration(value) == seconds
    assert parse_when(value) == (seconds, None)
    assert batchq.queue.parse_duration is parse_duration
    mq_modules = (batchq.mq.archive, batchq.mq.reading)
    assert all(module.parse_duration is parse_duration for module in mq_modules)
    # A delay, jobs' and messages' alike (issue 23, item 5): one reading, durations or datetimes.
    # batchq.jobs.jobspec builds every job's options (issue 25, step 1)
    assert batchq.jobs.jobspec.parse_when is parse_when and batchq.mq.checks.parse_when is parse_when
    assert not hasattr(batchq.queue, "_delay_seconds") and not hasattr(batchq.mq.checks, "_seconds")
