"""A Django Task that does nothing, for bench/django_enqueue.py."""

from batchq.contrib.django.compat import task  # django.tasks, or the backport


@task()
def noop(i: int) -> None:
    return None
