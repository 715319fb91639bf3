"""Sign in and out. Session based; throttled per email and per client address (adminauth.throttle)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import authenticate, login, logout
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from adminauth.services import admin_signin_record, admin_signout_record
from adminauth.throttle import failure_record, failures_clear, throttle_wait_seconds
from core.clientaddress import client_ip
from portal.forms import SignInForm
from portal.views.common import actor_of


def _safe_next(request: HttpRequest) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("portal:directories")


@sensitive_post_parameters("password")
@csrf_protect
@never_cache
@require_http_methods(["GET", "POST"])
def signin(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated and request.method == "GET":
        return redirect(_safe_next(request))
    form = SignInForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        email = form.cleaned_data["email"]
        ip = client_ip(request)
        wait = throttle_wait_seconds(ip=ip, email=email)
        if wait:
            minutes = max(1, round(wait / 60))
            form.add_error(
                None,
                f"Too many failed sign-in attempts. Try again in about {minutes} minute{'s' if minutes > 1 else ''}.",
            )
            status = 429
        else:
            user = authenticate(request, username=email, password=form.cleaned_data["password"])
            if user is None:
                failure_record(ip=ip, email=email)
                # One message for unknown email and wrong password: no account enumeration.
                form.add_error(None, "Email or password is incorrect.")
                status = 400
            else:
                failures_clear(email=email)
                login(request, user)  # rotates the session key (no session fixation)
                admin_signin_record(actor=actor_of(request))
                return redirect(_safe_next(request))
    elif request.method == "POST":
        status = 400
    return render(
        request,
        "portal/login.html",
        {"form": form, "next": request.POST.get("next") or request.GET.get("next") or ""},
        status=status,
    )


@require_POST
def signout(request: HttpRequest) -> HttpResponse:
    # POST only (CSRF-checked by the middleware): a GET link could sign admins out from another site.
    if request.user.is_authenticated:
        admin_signout_record(actor=actor_of(request))
        logout(request)
        messages.info(request, "You are signed out.")
    return redirect("portal:login")
