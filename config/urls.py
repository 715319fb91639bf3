"""Top-level routes: one include per surface, the health and readiness probes, and the metrics."""

from __future__ import annotations

from django.urls import include, path, re_path
from django.views.generic import RedirectView

from config.errorpages import api_not_found
from directories.health import healthz
from operations.views import metrics_view, readyz
from setuplinks.views import setup_not_found

urlpatterns = [
    # SCIM first: identity providers send most of the traffic, and Django tries the patterns in order.
    path("api/scim/v2.0/", include("scim.http.urls")),
    path("", include("restapi.urls")),
    path("healthz", healthz, name="healthz"),
    # Operations (contract §7.1): readiness for the load balancer, the node's Prometheus metrics.
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("auditlog/admin/v1/", include("adminapi.urls")),
    path("portal", RedirectView.as_view(url="/portal/", permanent=False)),
    path("", RedirectView.as_view(url="/portal/", permanent=False)),
    path("portal/", include("portal.urls")),
    # Setup links (contract §3.1): the page a customer's IT admin opens, no sign-in.
    path("setup", setup_not_found),
    path("setup/", include("setuplinks.urls")),
]

# Unknown paths under the API prefixes answer in their surface's error format, with DEBUG on too
# (Django shows its HTML technical 404 in DEBUG instead of calling handler404). Kept last.
urlpatterns.append(re_path(r"^(?:api/v1|api/scim|auditlog)(?:/(?P<rest>.*))?$", api_not_found))
handler400 = "config.errorpages.handler400"
handler403 = "config.errorpages.handler403"
handler404 = "config.errorpages.handler404"
handler500 = "config.errorpages.handler500"
