from __future__ import annotations

from django.apps import AppConfig


class AdminapiConfig(AppConfig):
    """The admin API under /auditlog/admin/v1: views, admin-token and JWT authentication, JSON shapes.
    No models: admins, tokens and the audit trail are adminauth's."""

    name = "adminapi"
