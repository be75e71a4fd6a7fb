from django.urls import path

from . import views

urlpatterns = [
    path("add", views.add),
    path("tools", views.tools),
    path("status", views.status),
]
