"""The write routes of the SCIM endpoint (RFC 7644 §3.3, §3.5, §3.6): each handler (scim/routes.py
names them) reads the request's If-Match and `attributes`/`excludedAttributes`, calls one service
(scim/services/) with the parsed body, and renders what was written. Everything the request can get
wrong is parsed before the service is called: a 400 writes nothing. The services and the store do the
writing and record the events.
"""

from __future__ import annotations

from typing import Any

from directories.models import Directory
from scim import services
from scim.protocol.versions import Precondition, precondition, version_of
from scim.reads import group_resources, projection, users_with_groups
from scim.request import Outcome, ScimRequest
from scim.resources import Projection, user_resource
from scim.selectors import FirstRead


def _if_match(request: ScimRequest) -> Precondition | None:
    return precondition(request.if_match, "If-Match")


def _known(read: FirstRead | None) -> list[Any] | None:
    """The user a write reads first, when it came with the authentication (None: it did not)."""
    return read.rows if read is not None and read.matches("user") else None


# --- users ------------------------------------------------------------------------------------------------------


def user_create(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    shown = projection(request.query)
    user, events = services.scim_user_create(directory=directory, body=body)
    return Outcome(201, shown.apply(user_resource(user)), events, version_of(user.updated_at))


def user_replace(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    if_match, shown = _if_match(request), projection(request.query)
    user, events = services.scim_user_replace(
        directory=directory, user_id=request.resource_id, body=body, known=_known(read), if_match=if_match
    )
    return _user_written(user, events, shown)


def user_patch(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    if_match, shown = _if_match(request), projection(request.query)
    user, events = services.scim_user_patch(
        directory=directory, user_id=request.resource_id, body=body, known=_known(read), if_match=if_match
    )
    return _user_written(user, events, shown)


def _user_written(user: Any, events: list[dict[str, Any]], shown: Projection) -> Outcome:
    return Outcome(
        200, shown.apply(user_resource(users_with_groups([user], shown)[0])), events, version_of(user.updated_at)
    )


def user_delete(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    if_match = _if_match(request)
    events = services.scim_user_delete(
        directory=directory, user_id=request.resource_id, known=_known(read), if_match=if_match
    )
    return Outcome(204, None, events)


# --- groups -----------------------------------------------------------------------------------------------------


def group_create(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    shown = projection(request.query)
    group, events = services.scim_group_create(directory=directory, body=body)
    # A group created without members has none to read back (its creation recorded no user_added).
    known = None if any(e["event"] == "group.user_added" for e in events) else {group.id: []}
    data = group_resources(directory, [group], shown, members=known)[0]
    return Outcome(201, data, events, version_of(group.updated_at))


def group_replace(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    if_match, shown = _if_match(request), projection(request.query)
    group, events = services.scim_group_replace(
        directory=directory, group_id=request.resource_id, body=body, if_match=if_match
    )
    return Outcome(200, group_resources(directory, [group], shown)[0], events, version_of(group.updated_at))


def group_patch(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    if_match, shown = _if_match(request), projection(request.query)
    group, events = services.scim_group_patch(
        directory=directory, group_id=request.resource_id, body=body, if_match=if_match
    )
    if not shown.attributes:
        # Entra prefers 204 for group PATCH and never needs the member list back (interop E8).
        return Outcome(204, None, events, version_of(group.updated_at))
    return Outcome(200, group_resources(directory, [group], shown)[0], events, version_of(group.updated_at))


def group_delete(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    if_match = _if_match(request)
    return Outcome(
        204, None, services.scim_group_delete(directory=directory, group_id=request.resource_id, if_match=if_match)
    )
