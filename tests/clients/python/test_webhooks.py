"""verify_webhook (roster_client) against headers made by Roster's own signer (webhooks/signing.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest
from roster_client import WebhookEvent, WebhookVerificationError, verify_webhook
from roster_client.webhooks import (
    MalformedSignatureHeader,
    SignatureMismatch,
    TimestampOutsideTolerance,
    verify_signature,
)

from webhooks.signing import signature_header

SECRET = "whsec-test-secret"
EVENT = {
    "id": "5d0c3c1e-5f7b-4c39-9a57-2f1d2b0f8e11",
    "event": "user.created",
    "created_at": "2030-01-01T00:00:00.000Z",
    "directory_id": "6d1f3c1e-5f7b-4c39-9a57-2f1d2b0f8e11",
    "tenant": "acme",
    "product": "crm",
    "sequence": 7,
    "data": {"id": "u1", "email": "ann@acme.test", "raw": {"userName": "ann"}},
}
BODY = json.dumps(EVENT).encode()


def test_a_delivery_signed_by_roster_verifies_and_gives_its_event() -> None:
    event = verify_webhook(body=BODY, signature=signature_header(BODY, SECRET), secret=SECRET)
    assert isinstance(event, WebhookEvent)
    assert (event.id, event.event, event.sequence, event.directory_id) == (
        EVENT["id"],
        "user.created",
        7,
        EVENT["directory_id"],
    )
    assert event.data == EVENT["data"] and event.previous_attributes is None and event["tenant"] == "acme"
    assert event.to_dict() == EVENT


def test_a_directory_level_event_has_no_sequence() -> None:
    body = json.dumps({"id": "e2", "event": "dsync.activated", "created_at": "…", "data": {"id": "d"}}).encode()
    event = verify_webhook(body=body, signature=signature_header(body, SECRET), secret=SECRET)
    assert event.sequence is None and event.event == "dsync.activated"


def test_header_made_by_the_signer_verifies_and_returns_its_timestamp() -> None:
    header = signature_header(BODY, SECRET, timestamp=1_700_000_000)
    assert header.startswith("t=1700000000,s=")
    assert verify_signature(BODY, header, SECRET, now=1_700_000_010) == 1_700_000_000


def test_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    header = signature_header(BODY, SECRET, timestamp=42)
    expected = hmac.new(SECRET.encode(), b"42." + BODY, hashlib.sha256).hexdigest()
    assert header == f"t=42,s={expected}"
    assert verify_signature(BODY, header, SECRET, now=42) == 42


def test_changed_body_is_a_mismatch() -> None:
    header = signature_header(BODY, SECRET)
    with pytest.raises(SignatureMismatch):
        verify_webhook(body=BODY + b" ", signature=header, secret=SECRET)


def test_wrong_secret_is_a_mismatch() -> None:
    header = signature_header(BODY, SECRET)
    with pytest.raises(SignatureMismatch):
        verify_webhook(body=BODY, signature=header, secret="another-secret")


def test_replayed_timestamp_cannot_be_swapped_for_a_fresh_one() -> None:
    old = signature_header(BODY, SECRET, timestamp=1000)
    forged = old.replace("t=1000", f"t={int(time.time())}")
    with pytest.raises(SignatureMismatch):
        verify_webhook(body=BODY, signature=forged, secret=SECRET)


@pytest.mark.parametrize("skew", [301, -301, 3600])
def test_timestamp_outside_default_five_minutes_is_refused(skew: int) -> None:
    header = signature_header(BODY, SECRET, timestamp=1_700_000_000)
    with pytest.raises(TimestampOutsideTolerance):
        verify_webhook(body=BODY, signature=header, secret=SECRET, now=1_700_000_000 + skew)


def test_tolerance_is_configurable() -> None:
    header = signature_header(BODY, SECRET, timestamp=1_700_000_000)
    assert verify_webhook(body=BODY, signature=header, secret=SECRET, tolerance=4000, now=1_700_003_600)
    with pytest.raises(TimestampOutsideTolerance):
        verify_webhook(body=BODY, signature=header, secret=SECRET, tolerance=10, now=1_700_000_011)


@pytest.mark.parametrize(
    "header",
    [None, "", "garbage", "t=abc,s=00", "s=00", "t=123", "t=-5,s=00", "t=1 2,s=00", "t=١٢٣,s=00"],
)
def test_malformed_headers_raise_a_clear_error(header: str | None) -> None:
    with pytest.raises(MalformedSignatureHeader):
        verify_webhook(body=BODY, signature=header, secret=SECRET)


def test_non_ascii_signature_is_a_mismatch_not_a_crash() -> None:
    header = f"t={int(time.time())},s=ünïcode"
    with pytest.raises(SignatureMismatch):
        verify_webhook(body=BODY, signature=header, secret=SECRET)


def test_one_matching_signature_among_several_is_accepted() -> None:
    good = signature_header(BODY, SECRET)
    t, s = good.split(",")
    assert verify_webhook(body=BODY, signature=f"{t},s=deadbeef,{s}", secret=SECRET).id == EVENT["id"]


def test_a_signed_body_that_is_not_an_event_is_refused() -> None:
    for body in (b"not json", b"[1, 2]", b'{"event": "x"}'):
        with pytest.raises(WebhookVerificationError):
            verify_webhook(body=body, signature=signature_header(body, SECRET), secret=SECRET)


def test_all_errors_share_one_base_class_for_receivers() -> None:
    for exc in (MalformedSignatureHeader, TimestampOutsideTolerance, SignatureMismatch):
        assert issubclass(exc, WebhookVerificationError) and issubclass(exc, ValueError)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body=BODY, signature=signature_header(BODY, SECRET), secret="")


def test_a_str_body_is_taken_as_its_utf8_bytes() -> None:
    text = BODY.decode()
    assert verify_webhook(body=text, signature=signature_header(BODY, SECRET), secret=SECRET).id == EVENT["id"]
