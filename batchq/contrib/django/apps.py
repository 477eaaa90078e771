from importlib import import_module
from importlib.util import find_spec

from django.apps import AppConfig


class BatchqConfig(AppConfig):
    name = "batchq.contrib.django"
    label = "batchq"
    verbose_name = "batchq"

    def ready(self) -> None:
        # `manage.py check` asks every task backend for its problems (an in-memory SQLite queue):
        # Django 6 registers that check when django.tasks is imported, the backport only when
        # its own app is installed, which it need not be.
        if find_spec("django.tasks") is None:
            import_module("django_tasks.checks")
