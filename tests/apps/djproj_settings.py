"""Settings of the Django project the Django Tasks tests drive (tests/acceptance/test_django_tasks.py).

DJPROJ_URL is the batchq test database. With DJPROJ_QUEUE_URL=1 Django's own database is an
SQLite file (DJPROJ_SQLITE) and the backend's OPTIONS URL points at DJPROJ_URL (a queue in
another database than the app's); otherwise DATABASES["default"] is DJPROJ_URL itself, so jobs
are enqueued on Django's connection and join its transactions.
"""

from __future__ import annotations

import os
from typing import Any

from batchq.contrib.django.compat import DUMMY_BACKEND
from batchq.core.config import parse_url

URL = os.environ["DJPROJ_URL"]


def database(url: str) -> dict[str, Any]:
    parsed = parse_url(url)
    if parsed.dialect == "sqlite":
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": parsed.database,
            "TEST": {"NAME": parsed.database},
        }
    engine = "django.db.backends.mysql" if parsed.dialect == "mysql" else "django.db.backends.postgresql"
    settings: dict[str, Any] = {
        "ENGINE": engine,
        "NAME": parsed.database,
        "USER": parsed.user or ("root" if parsed.dialect == "mysql" else "postgres"),
        "PASSWORD": parsed.password or "",
        "HOST": parsed.host,
        "PORT": str(parsed.port or ""),
    }
    if parsed.dialect == "mysql":
        settings["OPTIONS"] = {"charset": "utf8mb4"}
    return settings


SECRET_KEY = "djproj-tests"
USE_TZ = os.environ.get("DJPROJ_USE_TZ", "1") == "1"
TIME_ZONE = "Europe/Paris"
INSTALLED_APPS = ["batchq.contrib.django", "djproj_app"]
OPTIONS: dict[str, Any] = {"MAX_ERRORS": int(os.environ.get("DJPROJ_MAX_ERRORS", "1"))}
if os.environ.get("DJPROJ_QUEUE_URL") == "1":
    DATABASES = {"default": database("sqlite:///" + os.environ["DJPROJ_SQLITE"])}
    OPTIONS["URL"] = URL
else:
    DATABASES = {"default": database(URL)}
TASKS = {
    "default": {
        "BACKEND": "batchq.contrib.django.BatchqBackend",
        "QUEUES": ["default", "mail"],
        "OPTIONS": OPTIONS,
    },
    "other": {"BACKEND": DUMMY_BACKEND},
}
