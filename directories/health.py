"""GET /healthz: is this process able to serve, i.e. can it reach its database?"""

from __future__ import annotations

import logging

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

from core.logfilters import mark_logged
from core.outage import RETRY_AFTER_SECONDS

logger = logging.getLogger(__name__)


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        # The reason goes to the log only: a public probe should not learn database details.
        logger.error("healthz: database check failed: %s", type(exc).__name__)
        response = JsonResponse({"status": "unavailable", "database": "unreachable"}, status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        # This line is the one line: Django's request logger would add "Service Unavailable: /healthz".
        mark_logged(request)
        return response
    return JsonResponse({"status": "ok"})
