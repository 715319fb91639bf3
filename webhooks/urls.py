"""Webhook routes, mounted at the site root (config/urls.py). `/api/v1/dsync/…` aliases `/directory-sync/…`."""

from __future__ import annotations

from django.urls import path

from webhooks.apis import DirectoryEventsApi

urlpatterns = [
    path("api/v1/directory-sync/<str:directory_id>/events", DirectoryEventsApi.as_view(), name="directory-events"),
    path("api/v1/dsync/<str:directory_id>/events", DirectoryEventsApi.as_view(), name="dsync-directory-events"),
]
