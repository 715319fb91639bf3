"""What every view of the admin API under /auditlog/admin/v1 shares: the two base views (the login's, and
every other one's, which authenticates an admin), paging, and the envelope's 404 for unknown routes.

Views are thin: parse, call one service, render. Every answer is the {data, error} envelope except a
successful `_login`, which is the bare object Jackson's clients expect. Lists are paged with
pageOffset/pageLimit (default 100, at most 1000). Bodies are read like a REST body (core.apiinput): 413
past the size limit, NUL/surrogates/64-bit checked, any Content-Type.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from adminapi.credentials import AdminAuthentication, actor_of
from audit.actors import Actor
from core.apiinput import page_bounds, query_check
from core.envelope import EnvelopeOnly, fail_json
from core.errors import NotFound
from directories.models import Directory
from directories.selectors import directory_get


def paged(request: Request, qs: QuerySet) -> list:
    """One page of `qs` by pageOffset/pageLimit, read as on the REST API (core.apiinput)."""
    offset, limit = page_bounds(request)
    return list(qs[offset : offset + limit]) if limit else []


class AdminApiView(EnvelopeOnly, APIView):
    """What every admin API view does: checks the query after authentication (a stranger learns
    nothing), and says when to retry a throttled request."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        query_check(request)

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        if isinstance(exc, exceptions.Throttled) and exc.wait:
            response["Retry-After"] = str(int(exc.wait))
        return response


class AdminView(AdminApiView):
    authentication_classes = [AdminAuthentication]

    def _directory(self, directory_id: str) -> Directory:
        directory = directory_get(directory_id=directory_id)
        if directory is None:
            raise NotFound("Directory not found.")
        return directory

    def _actor(self) -> Actor:
        return actor_of(self.request)


@csrf_exempt
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Unknown routes under the admin prefix answer in the envelope, not with Django's HTML page."""
    return fail_json("Not found.", 404)
