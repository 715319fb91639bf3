"""Directory pages: list, create, the directory's own page, edit, toggles, secret rotation, delete.

Every write goes through adminauth's audited services, so each admin action is audited exactly once,
whether it comes from the portal or the admin API.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from adminauth import services as admin_services
from core.errors import RosterError, ValidationFailed
from directories.models import DirectoryType
from directories.rendering import scim_endpoint
from directories.selectors import directory_get, directory_groups, directory_users
from portal.forms import DeleteConfirmForm, DirectoryCreateForm, DirectoryEditForm
from portal.selectors import portal_directory_list
from portal.views.common import (
    admin_page,
    client_ip,
    form_error_from,
    not_found,
    paginate,
    search_term,
)

# Which setup notes to open first on a directory's page; a generic directory shows them all closed.
SETUP_NOTES = [
    (DirectoryType.OKTA.value, "Okta"),
    (DirectoryType.AZURE.value, "Microsoft Entra ID"),
    (DirectoryType.ONELOGIN.value, "OneLogin"),
    (DirectoryType.JUMPCLOUD.value, "JumpCloud"),
]


def _audit_args(request: HttpRequest) -> dict[str, Any]:
    return {"actor": request.user, "client_ip": client_ip(request)}


@admin_page
def directory_list(request: HttpRequest) -> HttpResponse:
    q, tenant, product = search_term(request), search_term(request, "tenant"), search_term(request, "product")
    page = paginate(request, portal_directory_list(search=q, tenant=tenant, product=product))
    return render(
        request,
        "portal/directories/list.html",
        {"page": page, "q": q, "tenant": tenant, "product": product, "filtered": bool(q or tenant or product)},
    )


@admin_page
@require_http_methods(["GET", "POST"])
def directory_create(request: HttpRequest) -> HttpResponse:
    form = DirectoryCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            directory = admin_services.admin_directory_create(**_audit_args(request), data=form.service_data())
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
    notes = [(value, label, value == directory.type) for value, label in SETUP_NOTES]
    return render(
        request,
        "portal/directories/detail.html",
        {
            "directory": directory,
            "scim_endpoint": scim_endpoint(directory),
            "user_count": directory_users(directory=directory).count(),
            "group_count": directory_groups(directory=directory).count(),
            "setup_notes": notes,
            "tab": "overview",
        },
    )


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
    }
    form = DirectoryEditForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            admin_services.admin_directory_update(**_audit_args(request), directory=directory, data=form.service_data())
        except ValidationFailed as exc:
            form_error_from(form, exc)
        else:
            messages.success(request, "Directory saved.")
            return redirect("portal:directory", directory_id=directory.id)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "portal/directories/edit.html",
        {"directory": directory, "form": form, "tab": "settings"},
        status=status,
    )


def _flag_from_post(request: HttpRequest) -> bool | None:
    # The form says which state it wants ("on"/"off") rather than "flip": a double submit stays harmless.
    return {"on": True, "off": False}.get(request.POST.get("value", ""))


@admin_page
@require_POST
def directory_logging_set(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    value = _flag_from_post(request)
    if value is None:
        messages.error(request, "Choose on or off.")
    else:
        admin_services.admin_directory_update(
            **_audit_args(request), directory=directory, data={"log_webhook_events": value}
        )
        messages.success(
            request, "Webhook deliveries are now logged." if value else "Webhook deliveries are no longer logged."
        )
    # The deliveries page's empty state has its own "turn logging on" button; send the admin back there.
    target = "portal:deliveries" if request.POST.get("back") == "deliveries" else "portal:directory"
    return redirect(target, directory_id=directory.id)


@admin_page
@require_POST
def directory_active_set(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    value = _flag_from_post(request)
    if value is None:
        messages.error(request, "Choose on or off.")
    else:
        admin_services.admin_directory_update(
            **_audit_args(request), directory=directory, data={"deactivated": not value}
        )
        messages.success(
            request,
            "Directory activated: the identity provider can sync again."
            if value
            else "Directory deactivated: SCIM requests are refused with 403 until you activate it.",
        )
    return redirect("portal:directory", directory_id=directory.id)


@admin_page
@require_http_methods(["GET", "POST"])
def directory_scim_secret_rotate(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    if request.method == "POST":
        admin_services.admin_directory_scim_secret_rotate(**_audit_args(request), directory=directory)
        messages.success(
            request,
            "New SCIM secret created. The old one no longer works: paste the new one into the identity provider.",
        )
        return redirect("portal:directory", directory_id=directory.id)
    return render(
        request,
        "portal/directories/confirm_rotate.html",
        {"directory": directory, "secret_kind": "SCIM", "tab": "overview"},
    )


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
            admin_services.admin_directory_webhook_secret_rotate(**_audit_args(request), directory=directory)
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
        admin_services.admin_directory_delete(**_audit_args(request), directory=directory)
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
