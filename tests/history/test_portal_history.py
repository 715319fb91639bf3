"""The portal's "History" tab (contract §5.3): the users and their groups at a moment, the difference between
two, and each as a CSV download."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from adminauth.models import AdminUser
from directories.models import Directory
from tests.history.kit import rest_view
from tests.scim.conftest import Scim, group_body, user_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def portal(db) -> Client:  # noqa: ANN001
    client = Client()
    client.force_login(AdminUser.objects.create_user("ops@example.com", "correct horse battery staple"))
    return client


@pytest.fixture
def written(directory_a: Directory, scim_a: Scim) -> dict:
    ann = scim_a.post("/Users", user_body("ann@example.com"))[1]["id"]
    bob = scim_a.post("/Users", user_body("bob@example.com"))[1]["id"]
    group = scim_a.post("/Groups", group_body("Finance", [ann, bob]))[1]["id"]
    then = rest_view(directory_a)["sequence"]
    scim_a.delete(f"/Users/{bob}")
    return {"ann": ann, "bob": bob, "group": group, "then": then}


def _csv(response) -> list[dict[str, str]]:  # noqa: ANN001
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith("attachment;")
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_snapshot_and_its_csv(portal: Client, directory_a: Directory, written: dict) -> None:
    base = f"/portal/directories/{directory_a.id}"
    page = portal.get(f"{base}/history?at={written['then']}")
    assert page.status_code == 200
    text = page.content.decode()
    assert "bob@example.com" in text and "Finance" in text and 'aria-current="page">History' in text
    assert "bob@example.com" not in portal.get(f"{base}/history").content.decode()
    rows = _csv(portal.get(f"{base}/history.csv?at={written['then']}"))
    assert [(r["email"], r["groups"], r["active"]) for r in rows] == [
        ("ann@example.com", "Finance", "true"),
        ("bob@example.com", "Finance", "true"),
    ]
    assert portal.get(f"{base}/history?at=2000-01-01T00:00").status_code == 410
    assert portal.get(f"{base}/history?at=nonsense").status_code == 400
    assert portal.get(f"{base}/history.csv?at=2999-01-01T00:00").status_code == 400


def test_diff_and_its_csv(portal: Client, directory_a: Directory, written: dict) -> None:
    base = f"/portal/directories/{directory_a.id}"
    page = portal.get(f"{base}/history?mode=diff&at={written['then']}")
    assert page.status_code == 200 and "bob@example.com" in page.content.decode()
    rows = _csv(portal.get(f"{base}/history.csv?mode=diff&at={written['then']}"))
    assert [(r["kind"], r["change"], r["id"]) for r in rows] == [
        ("user", "deleted", written["bob"]),
        ("membership", "removed", written["bob"]),
    ]
    assert rows[1]["name"] == written["group"]
    assert Client().get(f"{base}/history").status_code == 302
    assert portal.get("/portal/directories/00000000-0000-0000-0000-000000000000/history").status_code == 404
