"""REST API: the users and groups of a tenant and product (of one of its directories with `directoryId`), one
user or group, a user's groups, and the users and groups of one directory by its id (contract §3). Lists are
paged and filtered as the contract says; a user or
group of another tenant or product is a 404, exactly like one that does not exist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from core.apiinput import page_bounds, query_boolean, query_datetime, query_nonempty, query_uuid
from core.envelope import ok
from core.errors import NotFound
from directories.models import Directory
from directories.rendering import group_data, group_with_members_data, users_data
from directories.selectors import (
    UserFilters,
    directory_get,
    directory_list,
    group_member_ids,
    tenant_group_get,
    tenant_groups_page,
    tenant_user_get,
    tenant_users_page,
    user_groups_page,
)
from restapi import openapi_common as doc
from restapi import openapi_users_groups as users_groups_doc
from restapi.apis import ApiView, directory_or_404, tenant_product
from restapi.openapi_marks import extend_schema


def _directory_filter(request: Request, tenant: str, product: str) -> Directory | None:
    """The optional `directoryId`: it must be a directory of this tenant + product, else 404 (an empty or
    malformed id too: the document says it is a UUID)."""
    directory_id = request.query_params.get("directoryId")
    if directory_id is None:
        return None
    directory = directory_get(directory_id=directory_id, tenant=tenant, product=product)
    if directory is None:
        raise NotFound("Directory not found.")
    return directory


def _tenant_list(
    request: Request, page: Callable[..., Any], render: Callable[[list[Any]], list[dict[str, Any]]], **filters: Any
) -> Response:
    """One page of a tenant and product's users or groups (`page`: the selector), optionally of one
    directory (`directoryId`), rendered with `render`; `filters` go to the selector."""
    tenant, product = tenant_product(request)
    offset, limit = page_bounds(request)
    directory = _directory_filter(request, tenant, product)
    if limit == 0:
        return ok([])
    rows = page(
        tenant=tenant,
        product=product,
        directory_id=directory.id if directory else None,
        offset=offset,
        limit=limit,
        **filters,
    )
    return ok(render(rows))


def _groups_data(groups: list[Any]) -> list[dict[str, Any]]:
    return [group_data(group) for group in groups]


def _user_filters(request: Request) -> UserFilters:
    """The user lists' filters (contract §3): `active`, `email`, `group`, `updatedAfter`; a malformed one is a
    400 naming it."""
    return UserFilters(
        active=query_boolean(request, "active"),
        email=query_nonempty(request, "email"),
        group_id=query_uuid(request, "group"),
        updated_after=query_datetime(request, "updatedAfter"),
    )


def _users_page(directories: list[Directory], offset: int, limit: int, filters: UserFilters) -> Response:
    """One page of the users of `directories` (which scope the page and give its users' maps)."""
    if limit == 0:
        return ok([])
    users = tenant_users_page(directories=directories, offset=offset, limit=limit, filters=filters)
    return ok(users_data(users, {d.id: d for d in directories}))


class UserListApi(ApiView):
    @extend_schema(
        operation_id="users_list",
        summary="List the users of a tenant and product",
        description="Users of every directory of the tenant and product (or of directoryId), oldest first.",
        parameters=[*users_groups_doc.LIST_PARAMETERS, *users_groups_doc.USER_FILTERS],
        responses={200: users_groups_doc.UserListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request) -> Response:
        tenant, product = tenant_product(request)
        offset, limit = page_bounds(request)
        filters = _user_filters(request)
        named = _directory_filter(request, tenant, product)
        # The tenant's directories, read once: they scope the page and give its users' maps.
        directories = [named] if named is not None else list(directory_list(tenant=tenant, product=product))
        return _users_page(directories, offset, limit, filters)


class UserDetailApi(ApiView):
    @extend_schema(
        operation_id="users_get",
        summary="Get a user of a tenant and product",
        description="A user of another tenant or product is a 404, like a missing one.",
        parameters=[doc.path_uuid("user_id"), doc.TENANT, doc.PRODUCT],
        responses={200: users_groups_doc.UserEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        tenant, product = tenant_product(request)
        user = tenant_user_get(tenant=tenant, product=product, user_id=user_id)
        if user is None:
            raise NotFound("User not found.")
        return ok(users_data([user])[0])


class UserGroupsApi(ApiView):
    @extend_schema(
        operation_id="users_groups_list",
        summary="List the groups a user of a tenant and product is a member of (without members)",
        description="Oldest group first. A user of another tenant or product is a 404, like a missing one.",
        parameters=[doc.path_uuid("user_id"), doc.TENANT, doc.PRODUCT, doc.PAGE_OFFSET, doc.PAGE_LIMIT],
        responses={200: users_groups_doc.GroupListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        tenant, product = tenant_product(request)
        offset, limit = page_bounds(request)
        user = tenant_user_get(tenant=tenant, product=product, user_id=user_id)
        if user is None:
            raise NotFound("User not found.")
        return ok(_groups_data(user_groups_page(user=user, offset=offset, limit=limit) if limit else []))


class GroupListApi(ApiView):
    @extend_schema(
        operation_id="groups_list",
        summary="List the groups of a tenant and product (without members)",
        description="Groups of every directory of the tenant and product (or of directoryId), oldest first.",
        parameters=[*users_groups_doc.LIST_PARAMETERS, users_groups_doc.GROUP_NAME],
        responses={200: users_groups_doc.GroupListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request) -> Response:
        return _tenant_list(request, tenant_groups_page, _groups_data, name=query_nonempty(request, "name"))


class GroupDetailApi(ApiView):
    @extend_schema(
        operation_id="groups_get",
        summary="Get a group of a tenant and product, with its members",
        description="A group of another tenant or product is a 404, like a missing one.",
        parameters=[doc.path_uuid("group_id"), doc.TENANT, doc.PRODUCT],
        responses={200: users_groups_doc.GroupEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, group_id: str) -> Response:
        tenant, product = tenant_product(request)
        group = tenant_group_get(tenant=tenant, product=product, group_id=group_id)
        if group is None:
            raise NotFound("Group not found.")
        return ok(group_with_members_data(group, group_member_ids(group=group)))


# --- one directory's users and groups, by its id (no tenant or product needed) -----------------------------


class DirectoryUsersApi(ApiView):
    @extend_schema(
        operation_id="directory_users_list",
        summary="List the users of a directory",
        description="Oldest first, with the same filters as the tenant's user list. An unknown directory is a 404.",
        parameters=[doc.path_uuid("directory_id"), doc.PAGE_OFFSET, doc.PAGE_LIMIT, *users_groups_doc.USER_FILTERS],
        responses={200: users_groups_doc.UserListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        offset, limit = page_bounds(request)
        return _users_page([directory], offset, limit, _user_filters(request))


class DirectoryGroupsApi(ApiView):
    @extend_schema(
        operation_id="directory_groups_list",
        summary="List the groups of a directory (without members)",
        description="Oldest first, with the same name filter as the tenant's group list. An unknown directory is a "
        "404.",
        parameters=[doc.path_uuid("directory_id"), doc.PAGE_OFFSET, doc.PAGE_LIMIT, users_groups_doc.GROUP_NAME],
        responses={200: users_groups_doc.GroupListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        offset, limit = page_bounds(request)
        name = query_nonempty(request, "name")
        if limit == 0:
            return ok([])
        groups = tenant_groups_page(
            tenant=directory.tenant,
            product=directory.product,
            directory_id=directory.id,
            offset=offset,
            limit=limit,
            name=name,
        )
        return ok(_groups_data(groups))
