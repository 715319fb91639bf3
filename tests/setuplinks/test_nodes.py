"""Revocation and expiry of setup links on every node at once (contract §3.1, §7.1): two web servers (each
its own `python -m server.web`, as two machines would run them) on the test database. A link revoked through one is
refused by the other on the next request; a link that expires stops on both; a secret generated through
one node's page works for a SCIM push to the other, whose page then shows the connection. Neither web
server's access log nor its own log shows a token."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from directories.services import directory_create
from setuplinks.models import SetupLink
from tests.actors import TEST_ACTOR
from tests.scim.conftest import user_body
from tests.setuplinks.conftest import make_link
from tests.webnodes import API_KEY, Node

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def test_revocation_and_expiry_hold_on_every_node_at_once(nodes: tuple[Node, Node]) -> None:
    a, b = nodes
    directory = directory_create(actor=TEST_ACTOR, data={"name": "Two nodes", "tenant": "acme", "product": "crm"})
    link, token = make_link(directory)
    assert a.page(token).status_code == 200 and b.page(token).status_code == 200

    # Revoked through node A's REST API: node B refuses it on its very next request.
    revoked = requests.delete(
        f"{a.url}/api/v1/directory-sync/{directory.id}/setup-links/{link.id}",
        headers={"Authorization": f"Bearer {API_KEY}"},
        timeout=10,
    )
    assert revoked.status_code == 204
    assert b.page(token).status_code == 404 and a.page(token).status_code == 404

    # A link that reaches its expiry while both nodes serve it stops on both.
    soon, soon_token = make_link(directory)
    SetupLink.objects.filter(pk=soon.pk).update(expires_at=timezone.now() + timedelta(seconds=2))
    assert a.page(soon_token).status_code == 200 and b.page(soon_token).status_code == 200
    time.sleep(2.2)
    assert a.page(soon_token).status_code == 404 and b.page(soon_token).status_code == 404
    # Same answer as an unknown token, byte for byte, on both.
    assert a.page(soon_token).content == b.page(token).content == a.page("z" * 43).content

    # A secret generated through node A's page authenticates a push to node B, and B's page shows it.
    _live, live_token = make_link(directory)
    page = a.page(live_token)
    # The CSRF cookie is Secure outside DEBUG (browsers would not send it over plain http): sent by hand.
    cookie = page.cookies["csrftoken"]
    answer = requests.post(
        f"{a.url}/setup/{live_token}/secret",
        data={"csrfmiddlewaretoken": CSRF.search(page.text).group(1)},
        headers={"Cookie": f"csrftoken={cookie}", "Referer": f"{a.url}/setup/{live_token}"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text[:500]
    secret = re.search(r'<code id="scim-secret" class="value">([^<]+)</code>', answer.text).group(1)
    pushed = requests.post(
        f"{b.url}/api/scim/v2.0/{directory.id}/Users",
        json=user_body("nodes@acme.test"),
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/scim+json"},
        timeout=10,
    )
    assert pushed.status_code == 201, pushed.text
    shown = b.page(live_token).text
    assert '<strong id="state-words">Connected</strong>' in shown and '<dd id="user-count">1</dd>' in shown

    # Neither node wrote a token anywhere: not in its access log, not in its own log.
    for node in (a, b):
        text = node.logs()
        assert "/setup/***" in text  # the access log has the requests, masked
        for each in (token, soon_token, live_token, secret):
            assert each not in text
