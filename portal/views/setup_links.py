"""A directory's setup links in the portal (contract §3.1): "Invite IT admin" makes one and shows its URL
once; the directory's page lists them with their status, each active one with a revoke button.

The writes go through setuplinks' services, which audit them with the signed-in admin."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.errors import RosterError, ValidationFailed
from directories.selectors import directory_get
from portal.forms import SetupLinkInviteForm
from portal.views.common import actor_of, admin_page, form_error_from, not_found
from setuplinks.rendering import setup_link_url
from setuplinks.selectors import setup_link_get
from setuplinks.services import setup_link_create, setup_link_input, setup_link_revoke


@admin_page
@require_POST
def setup_link_invite(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    form = SetupLinkInviteForm(request.POST)
    if form.is_valid():
        try:
            link, token = setup_link_create(
                directory=directory, actor=actor_of(request), asked=setup_link_input(form.service_data())
            )
        except ValidationFailed as exc:
            form_error_from(form, exc)
        except RosterError as exc:  # a deactivated directory (409)
            messages.error(request, exc.message)
            return redirect("portal:directory", directory_id=directory.id)
        else:
            # Shown on this answer only: the token is not stored, and this page is never cached.
            return render(
                request,
                "portal/directories/setup_link_created.html",
                {"directory": directory, "link": link, "url": setup_link_url(token), "tab": "overview"},
            )
    return render(
        request,
        "portal/directories/setup_link_invite.html",
        {"directory": directory, "form": form, "tab": "overview"},
        status=400,
    )


@admin_page
@require_POST
def setup_link_revoke_view(request: HttpRequest, directory_id: str, link_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    link = setup_link_get(directory=directory, link_id=link_id)
    if link is None:
        return not_found(request, "setup link")
    setup_link_revoke(link=link, actor=actor_of(request))
    messages.success(request, "Setup link revoked: it no longer opens.")
    return redirect(reverse("portal:directory", args=[directory.id]) + "#setup-links")
