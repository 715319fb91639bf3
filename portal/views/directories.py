"""Directory pages: list, create, the directory's own page, edit, toggles, secret rotation (the SCIM secret,
the OAuth client secret, the webhook secret), delete.

Every write goes through the directory services with the signed-in admin as its Actor; the service records
the audit entry, so each admin action is audited exactly once, whether it comes from the portal or an API.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import RosterError, ValidationFailed
from core.ratelimit import scim_per_minute
from directories import services
from directories.activity.rendering import health_data, health_row
from directories.guard.rules import guard_setting
from directories.models import Directory, HealthState
from directories.rendering import scim_endpoint, scim_oauth_data
from directories.selectors import directory_get, directory_groups, directory_users
from portal.forms import (
    DeleteConfirmForm,
    DirectoryCreateForm,
    DirectoryEditForm,
    ScimSecretRotateForm,
    SetupLinkInviteForm,
)
from portal.selectors import portal_directory_list
from portal.views.common import (
    actor_of,
    admin_page,
    form_error_from,
    not_found,
    paginate,
    search_term,
)
from portal.views.held_changes import guard_context
from setuplinks.providers import PROVIDERS
from setuplinks.selectors import setup_link_list


@admin_page
def directory_list(request: HttpRequest) -> HttpResponse:
    q, tenant, product = search_term(request), search_term(request, "tenant"), search_term(request, "product")
    health = request.GET.get("health", "")
    if health not in HealthState.values:
        health = ""  # any other value: every state, as the select's first option
    page = paginate(request, portal_directory_list(search=q, tenant=tenant, product=product, health=health))
    return render(
        request,
        "portal/directories/list.html",
        {
            "page": page,
            "q": q,
            "tenant": tenant,
            "product": product,
            "health": health,
            "health_states": HealthState.choices,
            "filtered": bool(q or tenant or product or health),
        },
    )


@admin_page
@require_http_methods(["GET", "POST"])
def directory_create(request: HttpRequest) -> HttpResponse:
    form = DirectoryCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            directory = services.directory_create(data=form.service_data(), actor=actor_of(request))
        except ValidationFailed as exc:
            form_error_from(form, exc)
        else:
            messages.success(
                request,
                "Directory created. Paste the SCIM endpoint and secret below into the identity provider.",
            )
            return redirect("portal:directory", directory_id=directory.id)
    status = 400 if request.method == "POST" else 200
    return render(request, "portal/directories/create.html", {"form": form}, status=status)


@admin_page
def directory_detail(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    # The provider of the directory's type opens first; the steps are the setup page's (templates/providers/).
    notes = [(provider, provider.directory_type == directory.type) for provider in PROVIDERS]
    now = timezone.now()
    links = [(link, link.status_at(now)) for link in setup_link_list(directory=directory)]
    return render(
        request,
        "portal/directories/detail.html",
        {
            "directory": directory,
            "scim_endpoint": scim_endpoint(directory),
            "user_count": directory_users(directory=directory).count(),
            "group_count": directory_groups(directory=directory).count(),
            "setup_notes": notes,
            "attribute_paths": sorted({p for p in directory.attribute_map.values() if isinstance(p, str)}),
            "setup_links": links,
            "invite_form": SetupLinkInviteForm(),
            "oauth": scim_oauth_data(directory),
            "oauth_secrets": _oauth_secrets_rows(directory),
            "oauth_token_hours": settings.SCIM_OAUTH_TOKEN_SECONDS / 3600,
            "tab": "overview",
            **_health_context(directory),
            **guard_context(directory),
        },
    )


def _health_context(directory: Directory) -> dict[str, Any]:
    """The health panel's and the SCIM connection's facts (contract §4.1), times as datetimes to show
    in the admin's time zone."""
    now = timezone.now()
    health = health_row(directory)
    return {
        "health": health_data(directory, health, now),
        "health_row": health,
        "previous_secret_valid": directory.previous_scim_secret_valid(now),
        "silent_days": settings.SCIM_SILENT_DAYS,
        "scim_rate_limit": scim_per_minute(directory.scim_rate_limit) or "no limit",
    }


@admin_page
@require_http_methods(["GET", "POST"])
def directory_edit(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    initial = {
        "name": directory.name,
        "webhook_url": directory.webhook_url,
        "log_webhook_events": directory.log_webhook_events,
        "log_scim_requests": directory.log_scim_requests,
        "scim_rate_limit": directory.scim_rate_limit,
        **DirectoryEditForm.guard_initial(guard_setting(directory.deprovision_guard)),
    }
    form = DirectoryEditForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.directory_update(directory=directory, data=form.service_data(), actor=actor_of(request))
        except ValidationFailed as exc:
            form_error_from(form, exc)
        else:
            messages.success(request, "Directory saved.")
            return redirect("portal:directory", directory_id=directory.id)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "portal/directories/edit.html",
        {"directory": directory, "form": form, "tab": "settings", "scim_rate_limit_default": settings.SCIM_RATE_LIMIT},
        status=status,
    )


def _flag_from_post(request: HttpRequest) -> bool | None:
    # The form says which state it wants ("on"/"off") rather than "flip": a double submit stays harmless.
    return {"on": True, "off": False}.get(request.POST.get("value", ""))


def _switch(
    request: HttpRequest,
    directory_id: str,
    data: Callable[[bool], dict[str, Any]],
    said: tuple[str, str],
    back: str = "",
) -> HttpResponse:
    """Turn one of the directory's switches on or off, as the posted form says (`data`: the update for
    on or off; `said`: the messages for on and off). A service's refusal is shown instead. A page with
    its own button for the switch (`back`, e.g. a log's page) is where the admin goes back to."""
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    value = _flag_from_post(request)
    if value is None:
        messages.error(request, "Choose on or off.")
    else:
        try:
            services.directory_update(directory=directory, data=data(value), actor=actor_of(request))
        except RosterError as exc:  # e.g. 409: the SCIM secret cannot go off while OAuth has no client secret
            messages.error(request, exc.message)
        else:
            messages.success(request, said[0] if value else said[1])
    if back and request.POST.get("back") == back:
        return redirect(f"portal:{back}", directory_id=directory.id)
    return redirect("portal:directory", directory_id=directory.id)


def _log_switch(request: HttpRequest, directory_id: str, field: str, said: tuple[str, str], back: str) -> HttpResponse:
    """Turn one of the directory's logs on or off. The log's own page has its own "turn logging on" button
    (`back`): the admin goes back there."""
    return _switch(request, directory_id, lambda value: {field: value}, said, back)


@admin_page
@require_POST
def directory_logging_set(request: HttpRequest, directory_id: str) -> HttpResponse:
    said = ("Webhook deliveries are now logged.", "Webhook deliveries are no longer logged.")
    return _log_switch(request, directory_id, "log_webhook_events", said, "deliveries")


@admin_page
@require_POST
def directory_scim_logging_set(request: HttpRequest, directory_id: str) -> HttpResponse:
    said = ("Successful SCIM requests are now logged too.", "Only failed SCIM requests are logged now.")
    return _log_switch(request, directory_id, "log_scim_requests", said, "scim_requests")


@admin_page
@require_POST
def directory_active_set(request: HttpRequest, directory_id: str) -> HttpResponse:
    said = (
        "Directory activated: the identity provider can sync again.",
        "Directory deactivated: SCIM requests are refused with 403 until you activate it.",
    )
    return _switch(request, directory_id, lambda value: {"deactivated": not value}, said)


@admin_page
@require_http_methods(["GET", "POST"])
def directory_scim_secret_rotate(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    # Bound on every POST, even an empty one: no choice posted means "now".
    form = ScimSecretRotateForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        grace = form.cleaned_data["grace_seconds"]
        directory = services.directory_scim_secret_rotate(
            directory=directory, grace_seconds=grace, actor=actor_of(request)
        )
        if grace:
            until = timezone.localtime(directory.previous_scim_secret_expires_at)
            messages.success(
                request,
                f"New SCIM secret created. The old one keeps working until {until:%Y-%m-%d %H:%M %Z}: paste the "
                "new one into the identity provider before then.",
            )
        else:
            messages.success(
                request,
                "New SCIM secret created. The old one no longer works: paste the new one into the identity provider.",
            )
        return redirect("portal:directory", directory_id=directory.id)
    return render(
        request,
        "portal/directories/confirm_rotate.html",
        {"directory": directory, "secret_kind": "SCIM", "form": form, "tab": "overview"},
        status=400 if request.method == "POST" else 200,
    )


@admin_page
@require_POST
def directory_scim_static_secret_set(request: HttpRequest, directory_id: str) -> HttpResponse:
    """Turn the static SCIM secret on or off (contract §4.3); off is refused while OAuth has no client secret."""
    said = (
        "The SCIM secret works again.",
        "The SCIM secret is off: only OAuth access tokens authenticate SCIM requests now.",
    )
    return _switch(request, directory_id, lambda value: {"scim": {"static_secret_enabled": value}}, said)


@admin_page
@require_http_methods(["GET", "POST"])
def directory_scim_oauth_secret_rotate(request: HttpRequest, directory_id: str) -> HttpResponse:
    """A confirmation page, then a new OAuth client secret (contract §4.3), shown on the answer once."""
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    if request.method == "POST":
        directory, secret, _first = services.directory_scim_oauth_secret_rotate(
            directory=directory, actor=actor_of(request)
        )
        # Shown on this answer only: only its digest is stored, and this page is never cached.
        return render(
            request,
            "portal/directories/oauth_secret_created.html",
            {"directory": directory, "oauth": scim_oauth_data(directory, client_secret=secret), "tab": "overview"},
        )
    return render(
        request,
        "portal/directories/confirm_oauth_secret.html",
        {"directory": directory, "oauth": scim_oauth_data(directory), "tab": "overview"},
    )


def _oauth_secrets_rows(directory: Directory) -> list[dict[str, Any]]:
    """The directory's OAuth client secrets for the overview's table: times as datetimes (shown in the
    admin's time zone), and whether each has expired."""
    now = timezone.now()
    rows = []
    for entry in directory.scim_oauth_secrets:
        row = {key: datetime.fromisoformat(entry[key]) for key in ("created_at", "expires_at")}
        used = entry.get("last_used_at")
        row.update(
            id=entry["id"],
            hint=entry["hint"],
            last_used_at=datetime.fromisoformat(used) if used else None,
            expired=row["expires_at"] <= now,
        )
        rows.append(row)
    return rows


@admin_page
@require_POST
def directory_scim_oauth_secret_add(request: HttpRequest, directory_id: str) -> HttpResponse:
    """Add an OAuth client secret (contract §4.3) working the days the form says; shown on the answer once."""
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    raw = request.POST.get("expires_in_days", "").strip()
    try:
        # A form sends text: digits are the number of days, anything else is refused as the API refuses it.
        days = services.scim_oauth_secret_add_input({"expires_in_days": int(raw) if raw.isdigit() else raw})
        directory, entry, secret = services.directory_scim_oauth_secret_add(
            directory=directory, expires_in_days=days, actor=actor_of(request)
        )
    except RosterError as exc:  # out of bounds, or a sixth unexpired secret (409)
        messages.error(request, exc.message)
        return redirect(f"{reverse('portal:directory', args=[directory.id])}#oauth-method")
    # Shown on this answer only: only its digest is stored, and this page is never cached.
    return render(
        request,
        "portal/directories/oauth_secret_created.html",
        {
            "directory": directory,
            "oauth": scim_oauth_data(directory, client_secret=secret),
            "added": _oauth_secrets_rows(directory)[0] | {"id": entry["id"]},
            "tab": "overview",
        },
    )


@admin_page
@require_POST
def directory_scim_oauth_secret_revoke(request: HttpRequest, directory_id: str, secret_id: str) -> HttpResponse:
    """Revoke one OAuth client secret: it and its access tokens stop at once; the others keep working."""
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    try:
        services.directory_scim_oauth_secret_revoke(directory=directory, secret_id=secret_id, actor=actor_of(request))
    except RosterError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "The client secret is revoked: its access tokens no longer work.")
    return redirect(f"{reverse('portal:directory', args=[directory.id])}#oauth-method")


@admin_page
@require_POST
def directory_previous_scim_secret_revoke(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    _directory, revoked = services.directory_previous_scim_secret_revoke(directory=directory, actor=actor_of(request))
    if revoked:
        messages.success(request, "The old SCIM secret no longer works; only the current one does.")
    else:
        messages.info(request, "There was no old SCIM secret still working.")
    return redirect("portal:directory", directory_id=directory.id)


@admin_page
@require_http_methods(["GET", "POST"])
def directory_webhook_secret_rotate(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    if not directory.webhook_url:
        messages.error(request, "This directory has no webhook URL, so it has no webhook secret to rotate.")
        return redirect("portal:directory", directory_id=directory.id)
    if request.method == "POST":
        try:
            services.directory_webhook_secret_rotate(directory=directory, actor=actor_of(request))
        except RosterError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, "New webhook secret created. Update your application's verification key.")
        return redirect("portal:directory", directory_id=directory.id)
    return render(
        request,
        "portal/directories/confirm_rotate.html",
        {"directory": directory, "secret_kind": "webhook", "tab": "overview"},
    )


@admin_page
@require_http_methods(["GET", "POST"])
def directory_delete(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    form = DeleteConfirmForm(request.POST or None, expected_name=directory.name)
    if request.method == "POST" and form.is_valid():
        name = directory.name
        services.directory_delete(directory=directory, actor=actor_of(request))
        messages.success(request, f"Directory “{name}” deleted with its users, groups and delivery log.")
        return redirect("portal:directories")
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "portal/directories/confirm_delete.html",
        {
            "directory": directory,
            "form": form,
            "user_count": directory_users(directory=directory).count(),
            "group_count": directory_groups(directory=directory).count(),
            "tab": "overview",
        },
        status=status,
    )
