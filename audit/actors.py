"""Who made a change, as every surface hands it to the service that makes it.

One type for every surface: the REST API (an API key), the admin API and the portal (an admin), the
setup page (a setup link) and `manage.py` (the operating-system user). The service records the audit
entry from it (`audit.services.audit_record`) inside its own transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Actor:
    """`name` is how the trail shows who it was: an admin's email, `api key <name> (<prefix>…)`, `API_KEYS`,
    `manage.py (<os user>)`, `setup-link:<id>`. `via` is the surface: `rest-api`, `admin-api`, `portal`,
    `setup-link`, `manage.py`. `admin` is the AdminUser when an admin acted (the entry's `actor`),
    `client_ip` the client's address as the request scope resolved it (honouring TRUSTED_PROXY_COUNT)."""

    name: str
    via: str
    admin: Any = None
    client_ip: str | None = None
