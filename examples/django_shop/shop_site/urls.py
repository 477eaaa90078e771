from django.urls import path

from shop import views

urlpatterns = [
    path("orders/", views.checkout),
    path("orders/<int:pk>/", views.order_detail),
    path("tasks/<str:result_id>/", views.task_result),
]
