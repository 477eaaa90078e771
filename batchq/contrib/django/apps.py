from django.apps import AppConfig


class BatchqConfig(AppConfig):
    name = "batchq.contrib.django"
    label = "batchq"
    verbose_name = "batchq"
