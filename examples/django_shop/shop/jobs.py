"""A plain batchq job (no Django Tasks): the worker runs it when given `--task-modules shop.jobs`."""

from typing import Any

from .models import Event


def reserve_stock(payload: dict[str, Any]) -> None:
    Event.objects.create(order_id=payload["order"], kind="stock reserved")  # the warehouse's API
