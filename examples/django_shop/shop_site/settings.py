"""Settings of the shop: one database, named by SHOP_DATABASE_URL, holds the app's tables and
batchq's (the jobs commit with the orders).

    SHOP_DATABASE_URL=sqlite:////srv/shop/shop.db          (the default: shop.db here)
    SHOP_DATABASE_URL=postgresql://shop:secret@db/shop     (psycopg)
    SHOP_DATABASE_URL=mysql://shop:secret@db/shop          (mysqlclient: Django's MySQL driver)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
DATABASE_URL = os.environ.get("SHOP_DATABASE_URL", f"sqlite:///{BASE_DIR / 'shop.db'}")


def database(url: str) -> dict[str, Any]:
    """DATABASES["default"] of a URL (what dj-database-url does, for these three)."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": unquote(parts.path[1:])}
    engine = {"postgresql": "postgresql", "mysql": "mysql"}[parts.scheme]
    return {
        "ENGINE": f"django.db.backends.{engine}",
        "NAME": parts.path.lstrip("/"),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
        **({"OPTIONS": {"charset": "utf8mb4"}} if engine == "mysql" else {}),
    }


SECRET_KEY = os.environ.get("SHOP_SECRET_KEY", "change-me")
DEBUG = os.environ.get("SHOP_DEBUG", "0") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
ROOT_URLCONF = "shop_site.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATABASES = {"default": database(DATABASE_URL)}

INSTALLED_APPS = [
    "batchq.contrib.django",  # `manage.py batchq ...`, and the migration that creates batchq's tables
    "shop",
]

# Django's Tasks framework, with batchq as its backend: `task.enqueue()` writes a job in the
# "default" database, on Django's connection, so it joins the current transaction.atomic().
TASKS = {
    "default": {
        "BACKEND": "batchq.contrib.django.BatchqBackend",
        "QUEUES": ["default"],
    }
}
