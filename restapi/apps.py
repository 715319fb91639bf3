from __future__ import annotations

from django.apps import AppConfig


class RestapiConfig(AppConfig):
    """The REST API of /api/v1: views, API-key authentication and the OpenAPI document. No models."""

    name = "restapi"
