"""The setup page under /setup/<token> (contract §3.1): what a customer's IT admin opens to connect their
identity provider to one directory, without an account.

Server-rendered and complete without JavaScript (the provider is chosen with links, the secret and the
maps with plain forms; a small script only refreshes the status and fills the clipboard). Every answer
under /setup/ gets its security headers from setuplinks.middleware, whatever made it. It shows which ways
of authenticating the directory takes (its SCIM secret, OAuth client credentials: contract §4.3) and,
for OAuth, the token endpoint and the client id; the only secret it ever shows is one it just generated.

Before anything else each request passes the one throttle of failed credentials (adminauth.throttle,
scope SETUP_LINK): an unknown, expired or revoked token counts as a failure of the client's address,
and a throttled address gets 429 without any lookup. Those three answer the same 404 page, byte for byte,
so nothing tells them apart; a link whose directory was deactivated answers 410.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from adminauth.throttle import SETUP_LINK, failure_record, throttle_wait_seconds
from audit.actors import Actor
from core.clientaddress import client_ip
from core.errors import Conflict, RosterError, ValidationFailed
from directories.models import HealthState
from directories.rendering import scim_oauth_data
from setuplinks.forms import SUGGESTED_PATHS, MappingForm
from setuplinks.models import SetupLink, SetupLinkStatus
from setuplinks.providers import PROVIDERS, Provider, provider_base_url, provider_for
from setuplinks.selectors import SetupStatus, setup_link_by_token, setup_status
from setuplinks.services import (
    GeneratedClientSecret,
    GeneratedSecret,
    MappingRefused,
    role_choices,
    setup_link_open,
    setup_mapping_save,
    setup_oauth_secret_generate,
    setup_secret_generate,
)

# The connection's health state (contract §4.1) as the IT admin reads it: words, what to do, a tone.
STATE_WORDS: dict[str, tuple[str, str, str]] = {
    HealthState.NEVER_CONNECTED: (
        "Waiting for the first request",
        "No request has arrived yet. Paste the base URL and a secret into your identity provider, then start "
        "provisioning or push one user.",
        "wait",
    ),
    HealthState.HEALTHY: ("Connected", "Requests arrive with the right secret and succeed.", "ok"),
    HealthState.INVALID_CREDENTIALS: (
        "Wrong secret",
        "Your identity provider sends a secret that does not match. Generate a new secret below and paste it "
        "into the identity provider.",
        "fail",
    ),
    HealthState.FAILING: (
        "Requests are failing",
        "The last requests made with the right secret all failed. The requests below say why.",
        "fail",
    ),
    HealthState.SILENT: (
        "No requests lately",
        "It was connected, but no request has arrived for days. Is provisioning still on?",
        "warn",
    ),
    HealthState.DEACTIVATED: ("Deactivated", "The application has deactivated this connection.", "warn"),
}
_REFUSALS = {404: "setup/not_found.html", 410: "setup/gone.html", 429: "setup/throttled.html"}


def _refusal(status: int, *, retry_after: int | None = None) -> HttpResponse:
    # Rendered without the request: the 404 must be the same bytes whichever token was wrong, so it
    # carries nothing of the request (no CSRF token, no user).
    context = {"minutes": max(1, -(-retry_after // 60))} if retry_after else {}
    response = HttpResponse(render_to_string(_REFUSALS[status], context), status=status)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


def _link(request: HttpRequest, token: str) -> SetupLink | HttpResponse:
    """The token's active link with its directory, or the answer that refuses it."""
    ip = client_ip(request)
    wait = throttle_wait_seconds(ip=ip, scope=SETUP_LINK)
    if wait:
        return _refusal(429, retry_after=wait)
    link = setup_link_by_token(token=token)
    if link is None or link.status_at(timezone.now()) != SetupLinkStatus.ACTIVE:
        failure_record(ip=ip, scope=SETUP_LINK)
        return _refusal(404)
    if link.directory.deactivated:
        return _refusal(410)
    return link


def actor_of(request: HttpRequest, link: SetupLink) -> Actor:
    """Who acts on this page, as the audit trail names it: the link itself (`setup-link:<id>`), from the
    client's address."""
    return Actor(
        name=link.actor, via="setup-link", client_ip=client_ip(request), details={"setup_link_id": str(link.id)}
    )


def _refused_by_service(exc: RosterError) -> HttpResponse:
    """A write refused because the link was revoked, expired or its directory deactivated meanwhile."""
    return _refusal(410 if exc.status == 410 else 404)


def _status_context(link: SetupLink, token: str, provider: Provider) -> dict[str, Any]:
    connection: SetupStatus = setup_status(directory=link.directory)
    words, advice, tone = STATE_WORDS.get(connection.state, STATE_WORDS[HealthState.NEVER_CONNECTED])
    return {
        "token": token,
        "provider": provider,
        "connection": connection,
        "state_words": words,
        "state_advice": advice,
        "state_tone": tone,
    }


def _page(
    request: HttpRequest,
    link: SetupLink,
    token: str,
    *,
    provider_key: str | None,
    generated: GeneratedSecret | None = None,
    generated_oauth: GeneratedClientSecret | None = None,
    mapping_form: MappingForm | None = None,
    notice: str = "",
    status: int = 200,
) -> HttpResponse:
    made = generated or generated_oauth
    directory = made.directory if made is not None else link.directory
    provider = provider_for(key=provider_key, directory_type=directory.type)
    if link.allow_mapping and mapping_form is None:
        mapping_form = MappingForm(
            attribute_map=directory.attribute_map or {},
            role_map=directory.role_map or {},
            roles=role_choices(link=link, role_map=directory.role_map or {}),
        )
    context = {
        "link": link,
        "directory": directory,
        "providers": PROVIDERS,
        "base_url": provider_base_url(directory, provider),
        "attribute_paths": sorted({p for p in (directory.attribute_map or {}).values() if isinstance(p, str)}),
        "generated": generated,
        "generated_oauth": generated_oauth,
        # The OAuth client (contract §4.3): its id and token endpoint, never its secret but the one just made.
        "oauth": scim_oauth_data(directory),
        "notice": notice,
        "previous_secret_valid": generated is None and directory.previous_scim_secret_valid(timezone.now()),
        "mapping_form": mapping_form,
        "suggested_paths": SUGGESTED_PATHS,
        "saved": request.GET.get("saved") == "mapping",
        **_status_context(link, token, provider),
    }
    return render(request, "setup/page.html", context, status=status)


@require_http_methods(["GET", "HEAD"])
def setup_page(request: HttpRequest, token: str) -> HttpResponse:
    found = _link(request, token)
    if isinstance(found, HttpResponse):
        return found
    link = setup_link_open(link=found, actor=actor_of(request, found))
    return _page(request, link, token, provider_key=request.GET.get("provider"))


@require_http_methods(["GET", "HEAD"])
def setup_status_part(request: HttpRequest, token: str) -> HttpResponse:
    """Only the status part of the page, for the script that refreshes it in place (not an opening)."""
    found = _link(request, token)
    if isinstance(found, HttpResponse):
        return found
    provider = provider_for(key=request.GET.get("provider"), directory_type=found.directory.type)
    return render(request, "setup/_status.html", _status_context(found, token, provider))


@require_POST
def setup_secret(request: HttpRequest, token: str) -> HttpResponse:
    """Generate the directory's SCIM secret and show it on this answer, once."""
    return _secret_generated(request, token, setup_secret_generate, "generated")


@require_POST
def setup_oauth_secret(request: HttpRequest, token: str) -> HttpResponse:
    """Generate the OAuth client secret of the directory (while OAuth is on) and show it on this answer, once."""
    return _secret_generated(request, token, setup_oauth_secret_generate, "generated_oauth")


def _secret_generated(
    request: HttpRequest, token: str, generate: Callable[..., GeneratedSecret | GeneratedClientSecret], shown_as: str
) -> HttpResponse:
    """The page with the secret `generate` made through the link (passed to the page as `shown_as`); with
    a notice and 409 when the directory no longer takes that kind of secret (the application switched it)."""
    found = _link(request, token)
    if isinstance(found, HttpResponse):
        return found
    provider_key = request.POST.get("provider")
    try:
        generated = generate(link=found, actor=actor_of(request, found))
    except Conflict as exc:
        return _page(request, found, token, provider_key=provider_key, notice=exc.message, status=409)
    except RosterError as exc:
        return _refused_by_service(exc)
    return _page(request, found, token, provider_key=provider_key, **{shown_as: generated})


@require_POST
def setup_mapping(request: HttpRequest, token: str) -> HttpResponse:
    found = _link(request, token)
    if isinstance(found, HttpResponse):
        return found
    if not found.allow_mapping:
        return _refusal(404)
    directory = found.directory
    form = MappingForm(
        request.POST,
        attribute_map=directory.attribute_map or {},
        role_map=directory.role_map or {},
        roles=role_choices(link=found, role_map=directory.role_map or {}),
    )
    provider_key = request.POST.get("provider")
    if form.is_valid():
        try:
            setup_mapping_save(
                link=found,
                attribute_map=form.attribute_map_posted(),
                role_rows=form.role_rows_posted(),
                actor=actor_of(request, found),
            )
        except MappingRefused as exc:
            form.errors_from(exc.errors)
        except ValidationFailed as exc:
            form.add_error(None, exc.message)
        except RosterError as exc:
            return _refused_by_service(exc)
        else:
            provider = provider_for(key=provider_key, directory_type=directory.type)
            page = reverse("setup:page", args=[token])
            return HttpResponseRedirect(f"{page}?provider={provider.key}&saved=mapping#mapping", status=303)
    return _page(request, found, token, provider_key=provider_key, mapping_form=form, status=400)


@csrf_exempt  # any method: a POST to an unknown path is a 404 too, not a CSRF refusal
def setup_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """Any other path under /setup/: the same 404 as an unknown token, counted like one."""
    wait = throttle_wait_seconds(ip=client_ip(request), scope=SETUP_LINK)
    if wait:
        return _refusal(429, retry_after=wait)
    failure_record(ip=client_ip(request), scope=SETUP_LINK)
    return _refusal(404)


def csrf_refused(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form of the setup page posted without a valid CSRF token (config.errorpages hands it here)."""
    return HttpResponse(render_to_string("setup/csrf.html"), status=403)
