"""A directory's setup links (contract §3.1): list, create, revoke."""

from __future__ import annotations

from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView, paged
from core.apiinput import json_object_body
from core.envelope import ok
from core.errors import NotFound
from setuplinks.rendering import setup_link_data
from setuplinks.selectors import setup_link_get, setup_link_list
from setuplinks.services import setup_link_create, setup_link_input, setup_link_revoke


class AdminSetupLinksApi(AdminView):
    """A directory's setup links (contract §3.1): list them newest first, or create one (its URL shown in
    this answer only), audited with the admin."""

    def get(self, request: Request, directory_id: str) -> Response:
        directory = self._directory(directory_id)
        now = timezone.now()
        return ok([setup_link_data(link, now=now) for link in paged(request, setup_link_list(directory=directory))])

    def post(self, request: Request, directory_id: str) -> Response:
        directory = self._directory(directory_id)
        asked = setup_link_input(json_object_body(request))
        link, token = setup_link_create(directory=directory, actor=self._actor(), asked=asked)
        return ok(setup_link_data(link, token=token), status=201)


class AdminSetupLinkApi(AdminView):
    def delete(self, request: Request, directory_id: str, link_id: str) -> Response:
        """Revoke now, on every node: 204, also for a link already revoked or expired."""
        link = setup_link_get(directory=self._directory(directory_id), link_id=link_id)
        if link is None:
            raise NotFound("Setup link not found.")
        setup_link_revoke(link=link, actor=self._actor())
        return Response(status=204)
