"""Django Tasks: `manage.py batchq run` finds the tasks of each installed app's tasks module."""

try:
    from django.tasks import task  # Django 6
except ImportError:
    from django_tasks import task  # Django 5.2: the django-tasks backport

from .models import Event, Order


@task()
def send_confirmation(order_id: int) -> str:
    order = Order.objects.get(pk=order_id)
    Event.objects.create(order=order, kind="confirmation sent")  # here, the mail would go out
    return f"order {order.pk} ({order.item}) confirmed"
