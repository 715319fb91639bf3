"""The read routes of the SCIM endpoint: lists, `.search`, one user or group, and discovery (RFC 7644
§3.4, §4). Each handler (scim/routes.py names them) takes the authenticated directory and the
request, parses what the request asks (filter, sortBy, paging, attributes), reads through the store
and the selectors, and renders SCIM resources.

Also what a request reads before it is authenticated (`user_first_read`, `users_first_read`): a read by
keys taken straight from its URL, which comes with the directory's lookup (scim/authentication.py).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Q

from directories.models import Directory
from directories.selectors import user_groups_attach
from scim import storage
from scim.protocol import schemas as discovery
from scim.protocol.errors import ScimError, not_found
from scim.protocol.inputs import check_query
from scim.protocol.paging import paging
from scim.protocol.search import search_query
from scim.protocol.versions import precondition, version_of
from scim.request import Outcome, ScimRequest
from scim.resources import Projection, group_resource, user_resource
from scim.selectors import (
    Equality,
    FirstRead,
    scim_group_get,
    scim_group_members,
    scim_groups_page,
    scim_user_get,
    scim_user_shown,
)
from scim.storage.query.filter import filter_plan
from scim.storage.query.sort import sort_plan

Query = dict[str, Any]


def projection(query: Query) -> Projection:
    return Projection(query.get("attributes"), query.get("excludedAttributes"))


# --- before authentication --------------------------------------------------------------------------------------
#
# Nothing is parsed for a first read: a body or a filter waits until the request is authenticated. None
# for an invalid id or paging: its error is raised after authentication, as for any request.


def user_first_read(request: ScimRequest) -> FirstRead | None:
    """The user of GET /Users/<id>, read with the directory."""
    if not isinstance(request.query, dict):
        return None
    try:
        user_id = uuid.UUID(str(request.resource_id))
    except ValueError:
        return None
    return FirstRead("user", user_id=user_id, groups=request.method != "DELETE" and _wants_groups(request.query))


def user_first_write_read(request: ScimRequest) -> FirstRead | None:
    """The user of PUT, PATCH and DELETE /Users/<id>, read with the directory when the store writes it
    optimistically (scim.storage)."""
    return user_first_read(request) if storage.current().optimistic else None


def users_first_read(request: ScimRequest) -> FirstRead | None:
    """An unfiltered, unsorted page of GET /Users, read with the directory."""
    query = request.query
    if not isinstance(query, dict) or query.get("filter") not in (None, "") or query.get("sortBy") not in (None, ""):
        return None
    try:
        start, count = paging(query)
    except ScimError:
        return None
    return FirstRead("users", start_index=start, count=count, groups=_wants_groups(query))


def _wants_groups(query: Query) -> bool:
    """Whether the answer shows users' `groups` (attributes / excludedAttributes); parsing errors are
    raised later, after authentication."""
    try:
        return projection(query).wants("groups")
    except ScimError:
        return True


# --- users ------------------------------------------------------------------------------------------------------


def users_with_groups(users: list[Any], projection: Projection) -> list[Any]:
    """`users` with their groups read (one query for those the store did not bring them with), when
    the answer shows them."""
    if projection.wants("groups"):
        user_groups_attach(users=users)
    return users


def _condition(query: Query, resource_type: str) -> Q | Equality | None:
    flt = query.get("filter")
    if flt in (None, ""):
        return None
    return filter_plan(flt, resource_type=resource_type, documents=storage.current().documents)


def _order(query: Query, resource_type: str) -> list[Any] | None:
    return sort_plan(
        query.get("sortBy"), query.get("sortOrder"), resource_type=resource_type, documents=storage.current().documents
    )


def _users_page(directory: Directory, query: Query, read: FirstRead | None) -> Outcome:
    start, count = paging(query)
    shown = projection(query)
    page = read.page if read is not None and read.matches("users", start_index=start, count=count) else None
    condition = _condition(query, "users")
    order = _order(query, "users")
    total, users = storage.current().users_page(
        directory=directory,
        condition=condition,
        start_index=start,
        count=count,
        page=page,
        order=order,
        groups=shown.wants("groups"),
    )
    resources = [shown.apply(user_resource(u)) for u in users_with_groups(users, shown)]
    return Outcome(200, discovery.list_response(total, start, resources))


def users_list(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    return _users_page(directory, request.query, read)


def users_search(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    return _users_page(directory, _search(body), None)


def user_get(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    if_none_match = precondition(request.if_none_match, "If-None-Match")
    shown = projection(request.query)
    if read is not None and read.matches("user") and read.rows is not None:
        user = read.rows[0] if read.rows else None  # read with the directory
    else:
        user = scim_user_get(directory=directory, user_id=request.resource_id)
    user = scim_user_shown(user)  # a user with changes held: the identity provider's view of it
    if user is None:
        raise not_found("User")
    version = version_of(user.updated_at)
    if if_none_match is not None and if_none_match.matches(version):
        return Outcome(304, None, version=version)  # RFC 7644 §3.14: the client's copy is current
    return Outcome(200, shown.apply(user_resource(users_with_groups([user], shown)[0])), version=version)


# --- groups -----------------------------------------------------------------------------------------------------


def group_resources(
    directory: Directory,
    groups: list[Any],
    projection: Projection,
    *,
    members: dict[Any, list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """The groups as SCIM resources. `members`: the groups' member items when the caller knows them
    (else read, when the answer shows them)."""
    if not projection.wants("members"):
        members = None
    elif members is None:
        members = scim_group_members(directory=directory, group_ids=[g.id for g in groups])
    return [projection.apply(group_resource(g, members[g.id] if members is not None else None)) for g in groups]


def _groups_page(directory: Directory, query: Query) -> Outcome:
    start, count = paging(query)
    shown = projection(query)
    condition = _condition(query, "groups")
    order = _order(query, "groups")
    total, groups = scim_groups_page(
        directory=directory, condition=condition, start_index=start, count=count, order=order
    )
    return Outcome(200, discovery.list_response(total, start, group_resources(directory, groups, shown)))


def groups_list(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    return _groups_page(directory, request.query)


def groups_search(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    return _groups_page(directory, _search(body))


def group_get(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    if_none_match = precondition(request.if_none_match, "If-None-Match")
    group = scim_group_get(directory=directory, group_id=request.resource_id)
    if group is None:
        raise not_found("Group")
    version = version_of(group.updated_at)
    if if_none_match is not None and if_none_match.matches(version):
        return Outcome(304, None, version=version)
    return Outcome(200, group_resources(directory, [group], projection(request.query))[0], version=version)


# --- both -------------------------------------------------------------------------------------------------------


def _search(body: Any) -> Query:
    """RFC 7644 §3.4.3: a `.search` body carries what a GET list takes as query parameters."""
    query = search_query(body)
    check_query(query)
    return query


def all_search(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    """`POST /.search` at the root: one list of the users, then the groups, each in its own list
    order. startIndex and count run over that whole sequence: position `startIndex` is a user while
    it is within the users' total, else group number `startIndex - users' total`, so paging on
    walks through the users and on into the groups. A filter is run against each resource type; a
    type that cannot evaluate it (e.g. `userName` on groups) contributes nothing, and only a filter
    that neither type can evaluate is a 400. `sortBy` sorts each type that has the attribute (the
    other keeps its (created, id) order); one that neither type has is a 400."""
    query = _search(body)
    start, count = paging(query)
    shown = projection(query)
    conditions: dict[str, Q | Equality | None] = {}
    refused: list[ScimError] = []
    for kind in ("users", "groups"):
        try:
            conditions[kind] = _condition(query, kind)
        except ScimError as exc:
            if exc.status != 400:
                raise  # 403 sensitive (password) is refused whatever the type
            refused.append(exc)
    if not conditions:
        raise refused[0]
    orders: dict[str, list[Any] | None] = {}
    unsortable: list[ScimError] = []
    for kind in ("users", "groups"):
        try:
            orders[kind] = _order(query, kind)
        except ScimError as exc:
            unsortable.append(exc)
            orders[kind] = None
    if len(unsortable) == 2:
        raise unsortable[0]
    users_total, users = 0, []
    if "users" in conditions:
        users_total, users = storage.current().users_page(
            directory=directory,
            condition=conditions["users"],
            start_index=start,
            count=count,
            order=orders["users"],
            groups=shown.wants("groups"),
        )
        users_with_groups(users, shown)
    groups_total, groups = 0, []
    if "groups" in conditions:
        groups_total, groups = scim_groups_page(
            directory=directory,
            condition=conditions["groups"],
            start_index=max(1, start - users_total),
            count=count - len(users),
            order=orders["groups"],
        )
    resources = [shown.apply(user_resource(u)) for u in users] + group_resources(directory, groups, shown)
    return Outcome(200, discovery.list_response(users_total + groups_total, start, resources))


# --- discovery (RFC 7644 §4) ------------------------------------------------------------------------------------


def service_provider_config(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    if request.resource_id:
        raise not_found()  # a singleton: it has no ids below it
    return Outcome(200, discovery.service_provider_config(str(directory.id)))


def resource_types(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    return _discovery_list(discovery.resource_types(str(directory.id)), request.resource_id)


def schemas(directory: Directory, request: ScimRequest, body: Any, read: FirstRead | None) -> Outcome:
    return _discovery_list(discovery.schemas(str(directory.id)), request.resource_id)


def _discovery_list(items: list[dict[str, Any]], resource_id: Any) -> Outcome:
    """All of `items` as a ListResponse, or the one whose id is `resource_id`."""
    if not resource_id:
        return Outcome(200, discovery.list_response(len(items), 1, items))
    found = [item for item in items if item["id"] == resource_id]
    if not found:
        raise not_found()
    return Outcome(200, found[0])
