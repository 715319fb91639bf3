"""Who made a change, as every surface hands it to the service that makes it.

One type for every surface: the REST API (an API key), the admin API and the portal (an admin), the
setup page (a setup link) and `manage.py` (the operating-system user). Each surface builds its Actor in one
function (`restapi.apikeys.actor_of`, `adminapi.credentials.actor_of`, `portal.views.common.actor_of`,
`setuplinks.views.actor_of`, `command_actor` below for every command), and the service records the audit
entry from it (`audit.services.audit_record`) inside its own transaction.
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Actor:
    """`name` is how the trail shows who it was: an admin's email, `api key <name> (<prefix>…)`, `API_KEYS`,
    `manage.py (<os user>)`, `setup-link:<id>`. `via` is the surface: `rest-api`, `admin-api`, `portal`,
    `setup-link`, `manage.py`. `admin` is the AdminUser when an admin acted (the entry's `actor`),
    `client_ip` the client's address (core.clientaddress: it honours TRUSTED_PROXY_COUNT). `details` is what
    every entry of this actor adds about who it is: the REST API's `credential`, a setup link's
    `setup_link_id`."""

    name: str
    via: str
    admin: Any = None
    client_ip: str | None = None
    details: Mapping[str, str] = field(default_factory=dict, hash=False)


def os_user() -> str:
    """Who runs a command: the operating-system user's login name."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (some containers)
        return "unknown"


def command_actor() -> Actor:
    """The actor of every `manage.py` command: the operating-system user running it."""
    return Actor(name=f"manage.py ({os_user()})", via="manage.py")
