"""What every portal page shares: the sign-in requirement, no caching, the admin's time zone, paging, and who
the signed-in admin is to the audit trail (`actor_of`: the one place the portal builds its Actor)."""

from __future__ import annotations

import functools
import zoneinfo
from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.cache import never_cache

from audit.actors import Actor
from core.clientaddress import client_ip
from core.errors import ValidationFailed

PAGE_SIZE = 50

View = Callable[..., HttpResponse]


def admin_page(view: View) -> View:
    """Signed-in admins only (others go to the sign-in page), never cached (pages show secrets),
    times shown in the admin's own time zone."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            tz = zoneinfo.ZoneInfo(getattr(request.user, "timezone", "") or "UTC")
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            tz = zoneinfo.ZoneInfo("UTC")
        with timezone.override(tz):
            return view(request, *args, **kwargs)

    return never_cache(login_required(wrapper))


def actor_of(request: HttpRequest) -> Actor:
    """Who acts on a portal request: the signed-in admin, from the client's address as every surface decides
    it (TRUSTED_PROXY_COUNT)."""
    user = request.user
    return Actor(name=user.email, via="portal", admin=user, client_ip=client_ip(request))


def paginate(request: HttpRequest, queryset: QuerySet, *, per_page: int = PAGE_SIZE) -> Page:
    # get_page() turns a missing, non-numeric or out-of-range ?page= into the nearest real page.
    return Paginator(queryset, per_page).get_page(request.GET.get("page"))


def not_found(request: HttpRequest, what: str) -> HttpResponse:
    """A 404 inside the portal's layout. Unknown ids and malformed ids look the same."""
    return render(request, "portal/not_found.html", {"what": what}, status=404)


def search_term(request: HttpRequest, name: str = "q") -> str:
    # NUL characters are dropped: PostgreSQL refuses them in text parameters (a 500, not a search).
    return (request.GET.get(name) or "").replace("\x00", "").strip()[:200]


def form_error_from(form: Any, exc: ValidationFailed) -> None:
    """Show a service's validation message next to the field it names (or above the form)."""
    named = form.service_field(exc.field) if hasattr(form, "service_field") else exc.field
    field = named if named in form.fields else None
    form.add_error(field, exc.message)
