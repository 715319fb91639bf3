"""The SCIM request processor: authenticate, parse, route to a service or selector, answer.

`process` takes one `ScimRequest` (scim/http/request.py) from either HTTP entry (scim/http/views.py)
or the embedding API (scim/api.py) and returns `{"status": int, "data": dict | None}`; the HTTP
adapter turns that into bytes. A request costs one directory lookup until its secret has been checked
(`authenticate`); its body, PATCH operations and filter are parsed only afterwards.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import uuid
from collections.abc import Callable
from typing import Any

import orjson
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.requestid import scope_directory
from directories.models import Directory
from directories.selectors import directory_get, user_groups_attach
from scim import services, storage
from scim.http.request import ScimRequest
from scim.protocol import schemas as discovery
from scim.protocol.errors import ScimError, invalid_syntax, invalid_value, not_found
from scim.protocol.inputs import check_document, check_query, text_ok
from scim.protocol.paging import paging
from scim.protocol.search import search_query
from scim.protocol.versions import Precondition, precondition, version_of
from scim.rendering import Projection, group_resource, user_resource
from scim.selectors import (
    Equality,
    FirstRead,
    scim_group_get,
    scim_group_members,
    scim_groups_page,
    scim_user_get,
)
from scim.storage.query.filter import filter_plan
from scim.storage.query.sort import sort_plan

logger = logging.getLogger("roster.scim")

MAX_BODY_BYTES = 1024 * 1024
UNAUTHORIZED = "Authentication failed. Send 'Authorization: Bearer <SCIM secret of this directory>'."
# What the presented secret is compared with when the directory is unknown, and when it has no previous
# secret: as long as a real secret (compare_digest's time follows the expected value's length), and never
# one (fresh random values; a match counts only for a directory that exists, or a previous secret that does).
_DUMMY_SECRET = secrets.token_urlsafe(32).encode()
_DUMMY_PREVIOUS = secrets.token_urlsafe(32).encode()

Result = dict[str, Any]
Callback = Callable[[dict[str, Any]], None]


def parse_json(raw: bytes | str) -> Any:
    """Parse a request body: 413 above 1 MiB, 400 for anything that is not clean JSON or cannot be
    stored (scim.protocol.inputs)."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_BODY_BYTES:
        raise ScimError(413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    if not raw.strip():
        raise invalid_syntax("The request body is empty.")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        value = _json_fallback(raw, exc)
    check_document(value)
    return value


def _json_fallback(raw: bytes, exc: Exception) -> Any:
    """orjson refuses a lone surrogate escape ("\\ud800") and numbers past a double, which are valid JSON
    that cannot be stored: the standard library reads them so that the input gate reports them as
    invalidValue, as it does a NUL. Anything it cannot read either is invalidSyntax."""

    def not_json(constant: str) -> Any:
        raise ValueError(constant)  # NaN and Infinity are not JSON

    try:
        return json.loads(raw, parse_constant=not_json)
    except (ValueError, RecursionError):
        raise invalid_syntax("The request body is not valid JSON (UTF-8).") from exc


class Seen:
    """What processing learnt about the directory a request names, for the HTTP entry's record of the
    request (scim.http.activity): filled in by `authenticate`, whatever it answers."""

    __slots__ = ("directory", "looked_up", "secret")

    def __init__(self) -> None:
        self.looked_up = False  # the URL's directory was looked for
        self.directory: Directory | None = None  # and found (also when the secret was wrong)
        self.secret: str | None = None  # the secret that matched, current or previous

    def __repr__(self) -> str:
        return f"Seen(directory={self.directory!r}, looked_up={self.looked_up})"  # never the secret


def authenticate(
    directory_id: Any, secret: Any, *, read: FirstRead | None = None, seen: Seen | None = None
) -> Directory:
    """The directory whose SCIM secret this is: its current secret, or the previous one while a rotation
    with grace keeps it (contract §4.1). Every failure is the same 401 (interop T1, O9).

    `read`: the request's first read, by keys taken from the URL, fetched with the directory where the
    store can (its rows are used only after this check passes). `seen`: told what was found."""
    directory = (
        storage.current().directory_with(directory_id=directory_id, read=read)
        if read
        else directory_get(directory_id=directory_id)
    )
    presented = secret.encode("utf-8", "surrogatepass") if isinstance(secret, str) and secret else b""
    current = directory.scim_secret.encode() if directory is not None else _DUMMY_SECRET
    previous = _DUMMY_PREVIOUS
    has_previous = False
    if directory is not None and directory.previous_scim_secret:
        has_previous = directory.previous_scim_secret_valid(timezone.now())
        if has_previous:
            previous = directory.previous_scim_secret.encode()
    # Both comparisons run every time, even when the directory is unknown or has no previous secret, and
    # `|` and `&` do not short-circuit: timing reveals neither which directories exist nor which secret matched.
    matched_current = hmac.compare_digest(presented, current)
    matched_previous = hmac.compare_digest(presented, previous) & has_previous
    if seen is not None:
        seen.looked_up, seen.directory = True, directory
    if not (matched_current | matched_previous) or directory is None or not presented:
        raise ScimError(401, UNAUTHORIZED)
    scope_directory(directory.id, directory.type)  # log lines and /metrics name it from here on
    if seen is not None:
        seen.secret = directory.scim_secret if matched_current else directory.previous_scim_secret
    if directory.deactivated:
        raise ScimError(403, "This directory is deactivated; it accepts no SCIM requests.")
    return directory


def is_search(resource_id: Any) -> bool:
    return isinstance(resource_id, str) and resource_id.lower() == ".search"


def allowed_methods(resource_type: str, resource_id: Any) -> tuple[str, ...] | None:
    """The methods a route answers, or None for a route that does not exist (404)."""
    if resource_type in ("users", "groups"):
        if is_search(resource_id):
            return ("POST",)
        return ("GET", "PUT", "PATCH", "DELETE") if resource_id else ("GET", "POST")
    if resource_type in ("serviceproviderconfig", "resourcetypes", "schemas"):
        return ("GET",)
    if resource_type == ".search":
        return ("POST",)
    return None


def _list_response(total: int, start: int, resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemas": [discovery.LIST_SCHEMA],
        "totalResults": total,
        "itemsPerPage": len(resources),
        "startIndex": start,
        "Resources": resources,
    }


def _projection(query: dict[str, Any]) -> Projection:
    return Projection(query.get("attributes"), query.get("excludedAttributes"))


def _first_read(method: str, resource_type: str, resource_id: Any, query: Any) -> FirstRead | None:
    """What a request reads by keys taken straight from its URL, so that it can come with the
    authentication's directory lookup: the user of GET /Users/<id> (and of PUT, PATCH and DELETE when
    the store writes it optimistically, scim.storage), or an unfiltered page of users. Nothing is
    parsed for it: a body or a filter waits until the request is authenticated. None for anything
    else, or for an invalid id or paging (its error is raised after authentication, as for any
    request)."""
    if resource_type != "users" or not isinstance(query, dict):
        return None
    if resource_id:
        if method != "GET" and (method not in ("PUT", "PATCH", "DELETE") or not storage.current().optimistic):
            return None
        try:
            return FirstRead("user", user_id=uuid.UUID(str(resource_id)), groups=method != "DELETE" and _wants(query))
        except ValueError:
            return None
    if method != "GET" or query.get("filter") not in (None, "") or query.get("sortBy") not in (None, ""):
        return None
    try:
        start, count = paging(query)
    except ScimError:
        return None
    return FirstRead("users", start_index=start, count=count, groups=_wants(query))


def _wants(query: dict[str, Any]) -> bool:
    """Whether the answer shows users' `groups` (attributes / excludedAttributes); parsing errors are
    raised later, after authentication."""
    try:
        return _projection(query).wants("groups")
    except ScimError:
        return True


def _with_groups(users: list[Any], projection: Projection) -> list[Any]:
    """`users` with their groups read (one query for those the store did not bring them with), when
    the answer shows them."""
    if projection.wants("groups"):
        user_groups_attach(users=users)
    return users


class _Handler:
    def __init__(self, directory: Directory, query: dict[str, Any], read: FirstRead | None = None) -> None:
        self.directory = directory
        self.query = query
        self.read = read

    # users

    def _condition(self, resource_type: str) -> Q | Equality | None:
        flt = self.query.get("filter")
        if flt in (None, ""):
            return None
        return filter_plan(flt, resource_type=resource_type, documents=storage.current().documents)

    def _order(self, resource_type: str) -> list[Any] | None:
        return sort_plan(
            self.query.get("sortBy"),
            self.query.get("sortOrder"),
            resource_type=resource_type,
            documents=storage.current().documents,
        )

    def users_list(self) -> tuple[int, Any]:
        start, count = paging(self.query)
        projection = _projection(self.query)
        read = self.read
        page = read.page if read is not None and read.matches("users", start_index=start, count=count) else None
        condition = self._condition("users")
        order = self._order("users")
        total, users = storage.current().users_page(
            directory=self.directory,
            condition=condition,
            start_index=start,
            count=count,
            page=page,
            order=order,
            groups=projection.wants("groups"),
        )
        resources = [projection.apply(user_resource(u)) for u in _with_groups(users, projection)]
        return 200, _list_response(total, start, resources)

    def user_get(self, user_id: Any, if_none_match: Precondition | None = None) -> tuple[int, Any, str]:
        projection = _projection(self.query)
        read = self.read
        if read is not None and read.matches("user") and read.rows is not None:
            user = read.rows[0] if read.rows else None  # read with the directory
        else:
            user = scim_user_get(directory=self.directory, user_id=user_id)
        if user is None:
            raise not_found("User")
        version = version_of(user.updated_at)
        if if_none_match is not None and if_none_match.matches(version):
            return 304, None, version  # RFC 7644 §3.14: the client's copy is current
        return 200, projection.apply(user_resource(_with_groups([user], projection)[0])), version

    # groups

    def _groups_render(
        self, groups: list[Any], projection: Projection, *, members: dict[Any, list[dict[str, Any]]] | None = None
    ) -> list[dict[str, Any]]:
        """`members`: the groups' member items when the caller knows them (else read, when wanted)."""
        if not projection.wants("members"):
            members = None
        elif members is None:
            members = scim_group_members(directory=self.directory, group_ids=[g.id for g in groups])
        return [projection.apply(group_resource(g, members[g.id] if members is not None else None)) for g in groups]

    def groups_list(self) -> tuple[int, Any]:
        start, count = paging(self.query)
        projection = _projection(self.query)
        condition = self._condition("groups")
        order = self._order("groups")
        total, groups = scim_groups_page(
            directory=self.directory, condition=condition, start_index=start, count=count, order=order
        )
        return 200, _list_response(total, start, self._groups_render(groups, projection))

    # both

    def all_list(self) -> tuple[int, Any]:
        """`POST /.search` at the root: one list of the users, then the groups, each in its own list
        order. startIndex and count run over that whole sequence: position `startIndex` is a user while
        it is within the users' total, else group number `startIndex - users' total`, so paging on
        walks through the users and on into the groups. A filter is run against each resource type; a
        type that cannot evaluate it (e.g. `userName` on groups) contributes nothing, and only a filter
        that neither type can evaluate is a 400. `sortBy` sorts each type that has the attribute (the
        other keeps its (created, id) order); one that neither type has is a 400."""
        start, count = paging(self.query)
        projection = _projection(self.query)
        conditions: dict[str, Q | Equality | None] = {}
        refused: list[ScimError] = []
        for kind in ("users", "groups"):
            try:
                conditions[kind] = self._condition(kind)
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
                orders[kind] = self._order(kind)
            except ScimError as exc:
                unsortable.append(exc)
                orders[kind] = None
        if len(unsortable) == 2:
            raise unsortable[0]
        users_total, users = 0, []
        if "users" in conditions:
            users_total, users = storage.current().users_page(
                directory=self.directory,
                condition=conditions["users"],
                start_index=start,
                count=count,
                order=orders["users"],
                groups=projection.wants("groups"),
            )
            _with_groups(users, projection)
        groups_total, groups = 0, []
        if "groups" in conditions:
            groups_total, groups = scim_groups_page(
                directory=self.directory,
                condition=conditions["groups"],
                start_index=max(1, start - users_total),
                count=count - len(users),
                order=orders["groups"],
            )
        resources = [projection.apply(user_resource(u)) for u in users] + self._groups_render(groups, projection)
        return 200, _list_response(users_total + groups_total, start, resources)

    def group_get(self, group_id: Any, if_none_match: Precondition | None = None) -> tuple[int, Any, str]:
        group = scim_group_get(directory=self.directory, group_id=group_id)
        if group is None:
            raise not_found("Group")
        version = version_of(group.updated_at)
        if if_none_match is not None and if_none_match.matches(version):
            return 304, None, version
        return 200, self._groups_render([group], _projection(self.query))[0], version


def _route(
    directory: Directory,
    method: str,
    resource_type: str,
    resource_id: Any,
    body: Any,
    query: dict[str, Any],
    read: FirstRead | None = None,
    if_match: Precondition | None = None,
    if_none_match: Precondition | None = None,
) -> tuple[int, Any, list[dict[str, Any]], str | None]:
    """(status, data, events, the version of the one resource answered or None)."""
    handler = _Handler(directory, query, read)
    did = str(directory.id)
    if resource_type in ("serviceproviderconfig", "resourcetypes", "schemas"):
        if method != "GET":
            raise ScimError(405, f"{method} is not allowed here.")
        if resource_type == "serviceproviderconfig":
            if resource_id:
                raise not_found()
            return 200, discovery.service_provider_config(did), [], None
        items = discovery.resource_types(did) if resource_type == "resourcetypes" else discovery.schemas(did)
        if resource_id:
            found = [i for i in items if i["id"] == resource_id]
            if not found:
                raise not_found()
            return 200, found[0], [], None
        return 200, _list_response(len(items), 1, items), [], None
    if resource_type == ".search" or (resource_type in ("users", "groups") and is_search(resource_id)):
        # RFC 7644 §3.4.3: the body carries what a GET list takes as query parameters.
        search = search_query(body)
        check_query(search)
        searcher = _Handler(directory, search)
        if resource_type == "users":
            return (*searcher.users_list(), [], None)
        if resource_type == "groups":
            return (*searcher.groups_list(), [], None)
        return (*searcher.all_list(), [], None)
    if resource_type not in ("users", "groups"):
        raise not_found()
    users = resource_type == "users"
    if not resource_id:
        if method == "GET":
            return (*(handler.users_list() if users else handler.groups_list()), [], None)
        if method == "POST":
            if users:
                user, events = services.scim_user_create(directory=directory, body=body)
                return 201, _projection(query).apply(user_resource(user)), events, version_of(user.updated_at)
            group, events = services.scim_group_create(directory=directory, body=body)
            # A group created without members has none to read back (its creation recorded no user_added).
            known = None if any(e["event"] == "group.user_added" for e in events) else {group.id: []}
            data = handler._groups_render([group], _projection(query), members=known)[0]
            return 201, data, events, version_of(group.updated_at)
        raise ScimError(405, f"{method} is not allowed on /{'Users' if users else 'Groups'}.")
    if method == "GET":
        status, data, version = (
            handler.user_get(resource_id, if_none_match) if users else handler.group_get(resource_id, if_none_match)
        )
        return status, data, [], version
    # The user a write reads first, when it came with the authentication (None: it did not).
    known = read.rows if read is not None and read.matches("user") else None
    if method == "DELETE":
        if users:
            events = services.scim_user_delete(directory=directory, user_id=resource_id, known=known, if_match=if_match)
            return 204, None, events, None
        return 204, None, services.scim_group_delete(directory=directory, group_id=resource_id, if_match=if_match), None
    if method in ("PUT", "PATCH"):
        if users:
            write = services.scim_user_replace if method == "PUT" else services.scim_user_patch
            user, events = write(directory=directory, user_id=resource_id, body=body, known=known, if_match=if_match)
            projection = _projection(query)
            data = projection.apply(user_resource(_with_groups([user], projection)[0]))
            return 200, data, events, version_of(user.updated_at)
        group_write = services.scim_group_replace if method == "PUT" else services.scim_group_patch
        group, events = group_write(directory=directory, group_id=resource_id, body=body, if_match=if_match)
        projection = _projection(query)
        if method == "PATCH" and not projection.attributes:
            # Entra prefers 204 for group PATCH and never needs the member list back (interop E8).
            return 204, None, events, version_of(group.updated_at)
        return 200, handler._groups_render([group], projection)[0], events, version_of(group.updated_at)
    raise ScimError(405, f"{method} is not allowed on this resource.")


def process(req: ScimRequest, callback: Callback | None = None, *, seen: Seen | None = None) -> Result:
    """Process one SCIM request, from the embedding API or either HTTP entry (scim.http.views); returns
    {"status": int, "data": dict | None} (and "version", the version of the one resource answered, which
    the HTTP entries send as ETag), and calls `callback` as `scim_request` documents. `seen`, when
    given, learns what `authenticate` found."""
    events: list[dict[str, Any]] = []
    method, resource_type, resource_id, query = req.method, req.resource_type, req.resource_id, req.query
    try:
        if not text_ok(req.directory_id):
            raise ScimError(401, UNAUTHORIZED)  # cannot name a directory: the one 401 of every auth failure
        # Authenticate first: before it, a request costs the directory lookup (and what its URL names),
        # never the parsing of its body or filter.
        read = _first_read(method, resource_type, resource_id, query)
        directory = authenticate(req.directory_id, req.secret, read=read, seen=seen)
        if not isinstance(query, dict):
            raise invalid_value("query must be an object.")
        check_query(query)
        allowed = allowed_methods(resource_type, resource_id)
        if allowed is not None and method not in allowed:
            raise ScimError(405, f"{method} is not allowed here; use {', '.join(allowed)}.")
        if not text_ok(resource_id):
            raise not_found()  # no id holds a NUL or a lone surrogate
        body = req.body
        if resource_type not in ("users", "groups", ".search"):
            body = None  # discovery and unknown routes answer 405/404 before looking at a body
        elif isinstance(body, bytes | str):
            body = parse_json(body) if method in ("POST", "PUT", "PATCH") else None
        elif body is not None:
            check_document(body)
        if method in ("POST", "PUT", "PATCH") and body is None and resource_type in ("users", "groups", ".search"):
            raise invalid_syntax("The request body is empty.")
        if_match, if_none_match = _preconditions(req, resource_type)
        status, data, events, version = _route(
            directory, method, resource_type, resource_id, body, query, read, if_match, if_none_match
        )
    except ScimError as exc:
        return {"status": exc.status, "data": exc.body()}
    if callback is not None and events:
        # After commit (or at once when no transaction is open): the callback sees committed changes only.
        transaction.on_commit(lambda: [callback(event) for event in events])
    result: Result = {"status": status, "data": data}
    if version is not None:
        result["version"] = version  # the ETag header of the HTTP entries
    return result


def _preconditions(req: ScimRequest, resource_type: str) -> tuple[Precondition | None, Precondition | None]:
    """If-Match of a write and If-None-Match of a read of one user or group (RFC 7644 §3.14); the
    headers are not read anywhere else."""
    if resource_type not in ("users", "groups") or not req.resource_id or is_search(req.resource_id):
        return None, None
    if req.method in ("PUT", "PATCH", "DELETE"):
        return precondition(req.if_match, "If-Match"), None
    if req.method == "GET":
        return None, precondition(req.if_none_match, "If-None-Match")
    return None, None


def dumps(data: Any) -> bytes:
    return orjson.dumps(data)
