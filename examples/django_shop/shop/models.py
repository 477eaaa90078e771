from django.db import models


class Order(models.Model):
    item = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)


class Event(models.Model):
    """What the background jobs did for an order (one row each time a job runs)."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=40)
