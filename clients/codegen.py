"""The inputs of the client generators, made from Roster's OpenAPI document (standard library only).

    python clients/codegen.py client-document ROSTER_DOCUMENT OUT   # clients/openapi.json
    python clients/codegen.py results-document CLIENT_DOCUMENT OUT  # what the Python results come from

The client document is Roster's document with the paths the clients call: those under
/api/v1/directory-sync and /api/v1/webhook-endpoints. The /api/v1/dsync alias (kept for clients of other
directory-sync services) and the document's own route are left out, with every component only they use.
Nothing else changes: the types
are Roster's as it documents them.

The results document keeps the components a successful answer carries (the Python client types what
Roster returns; what it sends is keyword arguments of its methods).
scripts/clients-generate.sh runs both, then the generators.
"""

from __future__ import annotations

import json
import sys
from typing import Any

CLIENT_PREFIXES = ("/api/v1/directory-sync", "/api/v1/webhook-endpoints")
REF_PREFIX = "#/components/schemas/"


def refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            found.add(ref[len(REF_PREFIX) :])
        for value in node.values():
            found |= refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= refs(value)
    return found


def reachable(schemas: dict[str, Any], roots: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in schemas:
            continue
        seen.add(name)
        todo.extend(refs(schemas[name]))
    return seen


def _with_schemas(document: dict[str, Any], roots: set[str]) -> dict[str, Any]:
    schemas = document["components"]["schemas"]
    keep = reachable(schemas, roots)
    components = dict(document["components"], schemas={name: schemas[name] for name in sorted(keep)})
    return dict(document, components=components)


def client_document(document: dict[str, Any]) -> dict[str, Any]:
    paths = {path: item for path, item in document["paths"].items() if path.startswith(CLIENT_PREFIXES)}
    return _with_schemas(dict(document, paths=paths), refs(paths))


def results_document(document: dict[str, Any]) -> dict[str, Any]:
    roots: set[str] = set()
    for item in document["paths"].values():
        for operation in item.values():
            for status, response in operation.get("responses", {}).items():
                if status.startswith("2"):
                    roots |= refs(response)
    return _with_schemas(dict(document, paths={}), roots)


STEPS = {"client-document": client_document, "results-document": results_document}


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[1] not in STEPS:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[2], encoding="utf-8") as source:
        document = json.load(source)
    with open(argv[3], "w", encoding="utf-8") as target:
        json.dump(STEPS[argv[1]](document), target, indent=2, sort_keys=True, ensure_ascii=False)
        target.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
