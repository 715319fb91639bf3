"""CPU of the input work every SCIM write repeats, each beside the plainer version it replaced.

    .venv/bin/python -m bench.parsing               # 20,000 calls per line
    .venv/bin/python -m bench.parsing --calls 100000

In one process, no database: `scim.processor.parse_json` on Okta's POST /Users body and on a PATCH
that adds a member (orjson, then the input gate: one walk that leaves the strings of a body orjson read
without a `\\u0000` escape unchecked), the same with every string checked (`texts=True`), and the
copy of a user's document that a PATCH applies its operations to (`DocumentPatcher`) against
`copy.deepcopy`. time.process_time over many calls, the least of 5 rounds, µs per call.
"""

from __future__ import annotations

import argparse
import copy
import os

import orjson

from bench.opscost import least
from bench.workload import PATCH_SCHEMA, okta_user


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "true")
    import django

    django.setup()
    from scim.processor import parse_json
    from scim.protocol.documents.patch import DocumentPatcher
    from scim.protocol.inputs import check_document
    from scim.protocol.schemas import USER_INDEX

    user = orjson.dumps(okta_user("bench", 1))
    member = {"op": "add", "path": "members", "value": [{"value": "5b1e0a4c-2f0c-4d43-9a44-2a3b8c1d9e10"}]}
    patch = orjson.dumps({"schemas": [PATCH_SCHEMA], "Operations": [member]})
    document = orjson.loads(user)

    lines = [
        ("parse_json, Okta's user", lambda: parse_json(user)),
        ("the same, every string checked", lambda: check_document(orjson.loads(user), texts=True)),
        ("parse_json, a member add", lambda: parse_json(patch)),
        ("the same, every string checked", lambda: check_document(orjson.loads(patch), texts=True)),
        ("a PATCH's copy of the user", lambda: DocumentPatcher(document, index=USER_INDEX, extensions={})),
        ("copy.deepcopy of the user", lambda: copy.deepcopy(document)),
    ]
    print(f"{args.calls} calls per round, least of 5 rounds, µs of CPU per call")
    print("| what | µs |\n|---|---:|")
    for name, call in lines:
        print(f"| {name} | {least(call, args.calls):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
