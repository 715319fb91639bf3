"""The "Webhook endpoints" page (contract §5.2): list, create (the secret shown once), edit, enable or
disable, rotate the secret, "Send test event" with its outcome, delete, and each endpoint's failed
deliveries. The writes go through webhooks' services, which audit them with the signed-in admin."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core.errors import ValidationFailed
from portal.forms import EndpointRotateForm, WebhookEndpointForm
from portal.views.common import actor_of, admin_page, form_error_from, not_found, paginate
from webhooks.models import WebhookEndpoint
from webhooks.selectors import endpoint_deliveries, endpoint_get, endpoint_list
from webhooks.services.endpoints import endpoint_create, endpoint_delete, endpoint_secret_rotate, endpoint_update
from webhooks.services.fanout import endpoint_test_send

SECTION = "webhook_endpoints"


def _initial(endpoint: WebhookEndpoint) -> dict[str, object]:
    return {
        "url": endpoint.url,
        "description": endpoint.description,
        "events": " ".join(endpoint.events),
        "tenant": endpoint.tenant or "",
        "product": endpoint.product or "",
        "directory_id": str(endpoint.directory_id) if endpoint.directory_id else "",
        "format": endpoint.format,
        "enabled": endpoint.enabled,
    }


def _secret_page(request: HttpRequest, endpoint: WebhookEndpoint, what: str) -> HttpResponse:
    # Shown on this answer only; the page is never cached (admin_page).
    return render(
        request,
        "portal/webhook_endpoints/secret.html",
        {"endpoint": endpoint, "secret": endpoint.secret, "what": what, "section": SECTION},
    )


@admin_page
def endpoint_list_view(request: HttpRequest) -> HttpResponse:
    page = paginate(request, endpoint_list())
    return render(request, "portal/webhook_endpoints/list.html", {"page": page, "section": SECTION})


@admin_page
def endpoint_create_view(request: HttpRequest) -> HttpResponse:
    form = WebhookEndpointForm(request.POST or None, initial={"enabled": True, "format": "roster"})
    if request.method == "POST" and form.is_valid():
        try:
            endpoint = endpoint_create(data=form.service_data(), actor=actor_of(request))
        except ValidationFailed as exc:
            form_error_from(form, exc)
        else:
            return _secret_page(request, endpoint, "created")
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "portal/webhook_endpoints/form.html",
        {"form": form, "endpoint": None, "section": SECTION},
        status=status,
    )


@admin_page
def endpoint_detail_view(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    """The endpoint's settings (editable), its actions, and its deliveries (failed ones by default)."""
    endpoint = endpoint_get(endpoint_id=endpoint_id)
    if endpoint is None:
        return not_found(request, "webhook endpoint")
    form = WebhookEndpointForm(request.POST or None, initial=_initial(endpoint))
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                endpoint_update(endpoint=endpoint, data=form.service_data(), actor=actor_of(request))
            except ValidationFailed as exc:
                form_error_from(form, exc)
            else:
                messages.success(request, "Endpoint saved: the change applies to events recorded from now on.")
                return redirect("portal:webhook_endpoint", endpoint_id=endpoint.id)
        status = 400
    show = request.GET.get("show") or "failed"
    deliveries = endpoint_deliveries(endpoint=endpoint, failed=True if show == "failed" else None).order_by(
        "-created_at", "-id"
    )
    return render(
        request,
        "portal/webhook_endpoints/form.html",
        {
            "form": form,
            "endpoint": endpoint,
            "rotate_form": EndpointRotateForm(),
            "page": paginate(request, deliveries),
            "show": show,
            "section": SECTION,
        },
        status=status,
    )


@admin_page
@require_POST
def endpoint_enabled_view(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    endpoint = endpoint_get(endpoint_id=endpoint_id)
    if endpoint is None:
        return not_found(request, "webhook endpoint")
    enabled = request.POST.get("value") == "on"
    endpoint_update(endpoint=endpoint, data={"enabled": enabled}, actor=actor_of(request))
    messages.success(request, "Endpoint enabled." if enabled else "Endpoint disabled: it gets no new events.")
    return redirect("portal:webhook_endpoint", endpoint_id=endpoint.id)


@admin_page
@require_POST
def endpoint_rotate_view(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    endpoint = endpoint_get(endpoint_id=endpoint_id)
    if endpoint is None:
        return not_found(request, "webhook endpoint")
    form = EndpointRotateForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Grace must be a number of seconds from 0 to 86400.")
        return redirect("portal:webhook_endpoint", endpoint_id=endpoint.id)
    grace = form.cleaned_data["grace_seconds"] or 0
    endpoint = endpoint_secret_rotate(endpoint=endpoint, data={"grace_seconds": grace}, actor=actor_of(request))
    return _secret_page(request, endpoint, "rotated")


@admin_page
@require_POST
def endpoint_test_view(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    endpoint = endpoint_get(endpoint_id=endpoint_id)
    if endpoint is None:
        return not_found(request, "webhook endpoint")
    outcome = endpoint_test_send(endpoint=endpoint)
    if outcome.delivered:
        messages.success(request, f"Test event delivered: HTTP {outcome.status_code} in {outcome.latency_ms} ms.")
    else:
        code = f"HTTP {outcome.status_code}, " if outcome.status_code else ""
        messages.error(request, f"Test event not delivered ({code}{outcome.latency_ms} ms): {outcome.error}")
    return redirect("portal:webhook_endpoint", endpoint_id=endpoint.id)


@admin_page
@require_POST
def endpoint_delete_view(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    endpoint = endpoint_get(endpoint_id=endpoint_id)
    if endpoint is None:
        return not_found(request, "webhook endpoint")
    endpoint_delete(endpoint=endpoint, actor=actor_of(request))
    messages.success(request, "Endpoint deleted: it gets no more events.")
    return redirect("portal:webhook_endpoints")
