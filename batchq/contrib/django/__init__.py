"""batchq for Django: a backend for Django's Tasks framework and the ``manage.py batchq``
command (docs/django.md). Add "batchq.contrib.django" to INSTALLED_APPS and set

    TASKS = {"default": {"BACKEND": "batchq.contrib.django.BatchqBackend"}}
"""

from typing import Any

from .after import after  # no Django import: safe while Django loads this app


def __getattr__(name: str) -> Any:
    # The backend imports the Tasks framework: not while Django loads this app.
    if name == "BatchqBackend":
        from .backend import BatchqBackend

        return BatchqBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BatchqBackend", "after"]
