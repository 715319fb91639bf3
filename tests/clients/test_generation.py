"""What the clients are generated from, and what keeps them whole: the document the generators read is the one
Roster serves, every operation in it has a method in both libraries, and both libraries carry Roster's version.
(scripts/test.sh also regenerates the code and fails when it differs from what is committed.)"""

from __future__ import annotations

import importlib.util
import json
import re

import roster_client
from django.test import Client
from roster_client import Roster

from core.version import VERSION
from restapi.openapi import rest_document
from tests.clients.conftest import ROOT

CLIENTS = ROOT / "clients"
TYPESCRIPT = CLIENTS / "typescript"
_spec = importlib.util.spec_from_file_location("codegen", CLIENTS / "codegen.py")
codegen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(codegen)

# Each operation of the client document, and the method that calls it (Python names; TypeScript's are the same
# in camelCase). An operation Roster adds fails this test until both libraries have it.
METHODS = {
    "directories_list": "directories.list",
    "directories_create": "directories.create",
    "directories_get": "directories.get",
    "directories_update": "directories.update",
    "directories_delete": "directories.delete",
    "directories_scim_secret_rotate": "directories.rotate_scim_secret",
    "directories_previous_scim_secret_revoke": "directories.revoke_previous_scim_secret",
    "directories_scim_oauth_secret_rotate": "directories.rotate_scim_oauth_secret",
    "directories_scim_oauth_secrets_list": "directories.scim_oauth_secrets",
    "directories_scim_oauth_secrets_add": "directories.add_scim_oauth_secret",
    "directories_scim_oauth_secrets_revoke": "directories.revoke_scim_oauth_secret",
    "directory_events_list": "directories.deliveries",
    "directory_scim_requests_list": "directories.scim_requests",
    "directory_users_list": "directories.users",
    "directory_groups_list": "directories.groups",
    "users_list": "users.list",
    "users_get": "users.get",
    "users_groups_list": "users.groups",
    "groups_list": "groups.list",
    "groups_get": "groups.get",
    "directory_changes_list": "changes.page",
    "directory_changes_resend": "changes.resend",
    "directory_setup_links_create": "setup_links.create",
    "directory_setup_links_list": "setup_links.list",
    "directory_setup_link_revoke": "setup_links.revoke",
    "directory_held_changes_list": "held_changes.list",
    "directory_held_changes_approve": "held_changes.approve",
    "directory_held_changes_discard": "held_changes.discard",
    "directory_history_users": "history.users",
    "directory_history_groups": "history.groups",
    "directory_history_group_members": "history.group_members",
    "directory_history_diff": "history.diff",
    "webhook_endpoints_list": "webhook_endpoints.list",
    "webhook_endpoints_create": "webhook_endpoints.create",
    "webhook_endpoints_get": "webhook_endpoints.get",
    "webhook_endpoints_update": "webhook_endpoints.update",
    "webhook_endpoints_delete": "webhook_endpoints.delete",
    "webhook_endpoints_rotate_secret": "webhook_endpoints.rotate_secret",
    "webhook_endpoints_test": "webhook_endpoints.test",
    "webhook_endpoints_deliveries": "webhook_endpoints.deliveries",
}


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _operation_ids(document: dict) -> set[str]:
    return {operation["operationId"] for item in document["paths"].values() for operation in item.values()}


def test_the_generators_read_the_document_roster_serves(api_client: Client) -> None:
    served = api_client.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    assert rest_document() == served
    committed = json.loads((CLIENTS / "openapi.json").read_text())
    assert committed == codegen.client_document(served), "regenerate with: bash scripts/clients-generate.sh"


def test_the_client_document_has_the_canonical_paths_and_everything_they_name() -> None:
    document = codegen.client_document(rest_document())
    assert document["paths"] and all(path.startswith(codegen.CLIENT_PREFIXES) for path in document["paths"])
    assert not any(op.endswith("_dsync") for op in _operation_ids(document))
    schemas = document["components"]["schemas"]
    assert codegen.refs(document) <= set(schemas)  # nothing dangling
    assert codegen.reachable(schemas, codegen.refs(document["paths"])) == set(schemas)  # nothing unused
    assert "DirectoryCreateInput" in schemas
    results = codegen.results_document(document)["components"]["schemas"]
    assert {"Directory", "User", "Group", "GroupDetail", "Change", "ResendResult"} <= set(results)
    assert "DirectoryCreateInput" not in results and "ResendInput" not in results  # what clients send


def test_every_operation_has_a_method_in_both_libraries() -> None:
    assert set(METHODS) == _operation_ids(json.loads((CLIENTS / "openapi.json").read_text()))
    roster = Roster(base_url="http://roster.test", api_key="k")
    sources = "\n".join(path.read_text() for path in (TYPESCRIPT / "src").glob("*.ts"))
    for operation, method in METHODS.items():
        namespace, name = method.split(".")
        assert callable(getattr(getattr(roster, namespace), name, None)), (operation, method)
        assert re.search(rf"^\s+(async )?{_camel(name)}\(", sources, re.M), (operation, _camel(name))
        assert re.search(rf"readonly {_camel(namespace)}: ", sources), namespace


def test_both_libraries_carry_rosters_version() -> None:
    package = json.loads((TYPESCRIPT / "package.json").read_text())
    lock = json.loads((TYPESCRIPT / "package-lock.json").read_text())
    typescript_constant = re.search(r'VERSION = "([^"]+)"', (TYPESCRIPT / "src" / "version.ts").read_text())
    assert roster_client.__version__ == VERSION
    assert package["version"] == lock["version"] == lock["packages"][""]["version"] == VERSION
    assert typescript_constant and typescript_constant.group(1) == VERSION
    assert rest_document()["info"]["version"] == VERSION
