"""History in the admin API (`…/directories/<id>/history/…`, `…/diff`) and `manage.py directories export <id>
--at <time>` (contract §5.3): the same answers as the REST API's."""

from __future__ import annotations

import io

import orjson
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from directories.models import Directory
from history.models import HistoryPoint
from history.services import history_catch_up
from tests.adminauth.conftest import AdminSession, admin_client, admin_session, root  # noqa: F401
from tests.history.kit import REST, rest_view
from tests.scim.conftest import Scim, group_body, user_body

pytestmark = pytest.mark.django_db

ADMIN = "/auditlog/admin/v1/directories"


@pytest.fixture
def written(directory_a: Directory, scim_a: Scim) -> dict:
    ids = [scim_a.post("/Users", user_body(f"x{i}@example.com"))[1]["id"] for i in range(3)]
    group = scim_a.post("/Groups", group_body("Admins", ids[:2]))[1]
    then = rest_view(directory_a)
    scim_a.delete(f"/Users/{ids[0]}")
    scim_a.delete(f"/Groups/{group['id']}")
    return {"ids": ids, "group": group["id"], "then": then}


def test_admin_routes_answer_as_the_rest_api(
    admin_client: Client,  # noqa: F811
    api_client: Client,
    directory_a: Directory,
    written: dict,
) -> None:
    seq = written["then"]["sequence"]
    for path in (
        f"history/users?sequence={seq}",
        f"history/groups?sequence={seq}",
        f"history/groups/{written['group']}/members?sequence={seq}",
        f"diff?from={seq}",
        "diff?from=1&pageLimit=1",
    ):
        admin = admin_client.get(f"{ADMIN}/{directory_a.id}/{path}")
        rest = api_client.get(f"{REST}/{directory_a.id}/{path}")
        assert admin.status_code == rest.status_code == 200, (path, admin.content)
        assert orjson.loads(admin.content) == orjson.loads(rest.content)
    assert admin_client.get(f"{ADMIN}/{directory_a.id}/history/users?at=nonsense").status_code == 400
    assert admin_client.get(f"{ADMIN}/00000000-0000-0000-0000-000000000000/diff?from=1").status_code == 404
    assert Client().get(f"{ADMIN}/{directory_a.id}/history/users").status_code == 401


def _export(*args: str) -> tuple[list[dict], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("directories", "export", *args, stdout=out, stderr=err)
    return [orjson.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_export_at_a_time_writes_the_snapshot(directory_a: Directory, written: dict) -> None:
    seq = written["then"]["sequence"]
    history_catch_up(directory=directory_a)
    when = HistoryPoint.objects.get(directory=directory_a, sequence=seq).created_at
    lines, summary = _export(str(directory_a.id), "--at", when.isoformat())
    users = [line["data"] for line in lines if line["type"] == "user"]
    groups = [line["data"] for line in lines if line["type"] == "group"]
    assert users == written["then"]["users"]
    assert [g["id"] for g in groups] == [written["group"]]
    assert sorted(m["user_id"] for m in groups[0]["members"]) == sorted(written["ids"][:2])
    assert f"as of sequence {seq}" in summary and "3 users and 1 groups" in summary
    by_number, _ = _export(str(directory_a.id), "--at", str(seq))
    assert by_number == lines
    for bad in ("2999-01-01T00:00:00Z", "yesterday", "2000-01-01T00:00:00Z", "99999"):
        with pytest.raises(CommandError) as refused:
            _export(str(directory_a.id), "--at", bad)
        assert refused.value.args[0].startswith("--at: ")
