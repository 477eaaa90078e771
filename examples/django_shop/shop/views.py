import json

from django.conf import settings
from django.db import connection, transaction
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from batchq import Queue

from .jobs import reserve_stock
from .models import Order
from .tasks import send_confirmation

warehouse = Queue(settings.DATABASE_URL)  # batchq's own API, on the same database


class PaymentDeclined(Exception):
    pass


def charge(order: Order, card: str) -> None:
    if card == "4000-0000-0000-0002":  # the card number payment providers decline in tests
        raise PaymentDeclined(f"card declined for order {order.pk}")


@csrf_exempt  # a JSON API without cookies
@require_POST
def checkout(request: HttpRequest) -> JsonResponse:
    data = json.loads(request.body)
    try:
        with transaction.atomic():
            order = Order.objects.create(item=data["item"])
            # Both jobs are INSERTs in this transaction: they exist only if it commits.
            confirmation = send_confirmation.enqueue(order.pk)  # Django Tasks
            job = warehouse.enqueue(reserve_stock, {"order": order.pk}, conn=connection)  # batchq
            charge(order, data.get("card", ""))  # raises: the order and both jobs roll back
    except PaymentDeclined as exc:
        return JsonResponse({"error": str(exc)}, status=402)
    return JsonResponse({"order": order.pk, "task": confirmation.id, "job": job}, status=201)


@require_GET
def order_detail(request: HttpRequest, pk: int) -> JsonResponse:
    order = get_object_or_404(Order, pk=pk)
    return JsonResponse({"item": order.item, "events": [e.kind for e in order.events.order_by("id")]})


@require_GET
def task_result(request: HttpRequest, result_id: str) -> JsonResponse:
    result = send_confirmation.get_result(result_id)  # read from batchq's tables, by any process
    done = result.status == "SUCCESSFUL"
    return JsonResponse({"status": result.status, "return_value": result.return_value if done else None})
