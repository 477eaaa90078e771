"""A Django Task that does nothing, for bench/django_enqueue.py."""

from django_tasks import task


@task()
def noop(i: int) -> None:
    return None
