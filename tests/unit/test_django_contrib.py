"""batchq.contrib.django's parts that need no Django project: the backend's OPTIONS, the URL
built from a Django database's settings, and what the worker's allow-list entry exposes."""

from __future__ import annotations

import inspect
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from batchq.contrib.django import entry
from batchq.contrib.django.settings import DEFAULT_MAX_ERRORS, read_options, url_of_database
from batchq.core.config import parse_url
from batchq.errors import TaskError
from batchq.jobs.tasks import Resolver


def test_options_default_to_the_app_database() -> None:
    options = read_options("default", {"default"}, {})
    assert options.database == "default" and options.url is None
    assert options.max_errors == DEFAULT_MAX_ERRORS == 1 and options.keep_result is True
    assert options.task_modules == ()
    options = read_options(
        "x",
        set(),
        {
            "URL": "mysql://u:p@db/q",
            "MAX_ERRORS": 3,
            "KEEP_RESULT": timedelta(days=7),
            "TASK_MODULES": ["a.b"],
        },
    )
    assert (options.database, options.url, options.max_errors) == (None, "mysql://u:p@db/q", 3)
    assert options.task_modules == ("a.b",)


@pytest.mark.parametrize(
    ("queues", "options", "needle"),
    [
        ({"default"}, {"URLS": "x"}, "unknown option(s) URLS"),
        ({"default"}, {"URL": "sqlite:///q.db", "DATABASE": "default"}, "both URL and DATABASE"),
        ({"default"}, {"URL": "redis://localhost"}, "['URL']: bad database URL"),
        ({"default"}, {"MAX_ERRORS": 0}, "MAX_ERRORS"),
        ({"default"}, {"MAX_ERRORS": True}, "MAX_ERRORS"),
        ({"default"}, {"MAX_ERRORS": "3"}, "MAX_ERRORS"),
        ({"default"}, {"KEEP_RESULT": "forever"}, "KEEP_RESULT"),
        ({"default"}, {"KEEP_RESULT": -1}, "KEEP_RESULT"),
        ({"default"}, {"TASK_MODULES": "myapp.jobs"}, "TASK_MODULES"),
        ({"default", "mail\n"}, {}, "['QUEUES']: bad queue name"),
        ({"a" * 65}, {}, "['QUEUES']"),
    ],
)
def test_bad_options_are_refused_at_startup(queues: set[str], options: dict[str, Any], needle: str) -> None:
    with pytest.raises(ImproperlyConfigured) as raised:
        read_options("default", queues, options)
    assert needle in str(raised.value) and "TASKS['default']" in str(raised.value)


def test_url_of_a_sqlite_database(tmp_path: Any) -> None:
    assert url_of_database("d", {"ENGINE": "django.db.backends.sqlite3", "NAME": tmp_path / "app.db"}) == (
        f"sqlite:///{tmp_path}/app.db"
    )
    assert parse_url(
        url_of_database("d", {"ENGINE": "django.db.backends.sqlite3", "NAME": "rel.db"})
    ).database == ("rel.db")
    for name in ("", ":memory:", "file:memorydb_default?mode=memory&cache=shared"):
        with pytest.raises(ImproperlyConfigured, match="in-memory SQLite database"):
            url_of_database("d", {"ENGINE": "django.db.backends.sqlite3", "NAME": name})


def test_url_of_a_server_database_keeps_odd_credentials() -> None:
    settings = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "app db",
        "USER": "u@x",
        "PASSWORD": "p@ss/w:rd?#%",
        "HOST": "::1",
        "PORT": 5433,
    }
    parsed = parse_url(url_of_database("d", settings))
    assert (parsed.dialect, parsed.user, parsed.password) == ("postgresql", "u@x", "p@ss/w:rd?#%")
    assert (parsed.host, parsed.port, parsed.database) == ("::1", 5433, "app db")
    mysql = parse_url(
        url_of_database("d", {"ENGINE": "django.db.backends.mysql", "NAME": "app", "USER": "root"})
    )
    assert (mysql.dialect, mysql.host, mysql.port, mysql.user, mysql.password) == (
        "mysql",
        "localhost",
        None,
        "root",
        "",
    )
    with pytest.raises(ImproperlyConfigured, match="not one batchq runs on"):
        url_of_database("d", {"ENGINE": "django.db.backends.oracle", "NAME": "x"})


def test_the_allow_list_entry_exposes_only_django_task() -> None:
    """The worker allows the entry module; a row may name any public function or class of an
    allowed module: the entry defines no other, and DjangoTask no public method."""
    defined_here = [
        name
        for name, value in vars(entry).items()
        if not name.startswith("_")
        and callable(value)
        and getattr(value, "__module__", None) == entry.__name__
    ]
    assert defined_here == ["DjangoTask"]
    assert [name for name in vars(entry.DjangoTask) if not name.startswith("_")] == []
    resolver = Resolver([entry.__name__])
    for name in (
        f"{entry.__name__}:DjangoTask",
        f"{entry.__name__}:DjangoTask.__call__",
        f"{entry.__name__}:current_job",
        f"{entry.__name__}:normalize_json",
        f"{entry.__name__}:close_old_connections",
        "batchq.contrib.django.registry:discover",
    ):
        with pytest.raises(TaskError):
            resolver.resolve(name)
    assert inspect.isclass(entry.DjangoTask)
