from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

import webhooks.verify as verify_module
from webhooks.signing import signature_header
from webhooks.verify import (
    MalformedSignatureHeader,
    SignatureError,
    SignatureMismatch,
    TimestampOutsideTolerance,
    verify_signature,
)

SECRET = "whsec-test-secret"
BODY = b'{"id":"e1","event":"user.created"}'


def test_header_made_by_the_signer_verifies_and_returns_its_timestamp() -> None:
    header = signature_header(BODY, SECRET, timestamp=1_700_000_000)
    assert header.startswith("t=1700000000,s=")
    assert verify_signature(BODY, header, SECRET, now=1_700_000_010) == 1_700_000_000


def test_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    import hashlib
    import hmac

    header = signature_header(BODY, SECRET, timestamp=42)
    expected = hmac.new(SECRET.encode(), b"42." + BODY, hashlib.sha256).hexdigest()
    assert header == f"t=42,s={expected}"


def test_changed_body_is_a_mismatch() -> None:
    header = signature_header(BODY, SECRET)
    with pytest.raises(SignatureMismatch):
        verify_signature(BODY + b" ", header, SECRET)


def test_wrong_secret_is_a_mismatch() -> None:
    header = signature_header(BODY, SECRET)
    with pytest.raises(SignatureMismatch):
        verify_signature(BODY, header, "another-secret")


def test_replayed_timestamp_cannot_be_swapped_for_a_fresh_one() -> None:
    old = signature_header(BODY, SECRET, timestamp=1000)
    forged = old.replace("t=1000", f"t={int(time.time())}")
    with pytest.raises(SignatureMismatch):
        verify_signature(BODY, forged, SECRET)


@pytest.mark.parametrize("skew", [301, -301, 3600])
def test_timestamp_outside_default_five_minutes_is_refused(skew: int) -> None:
    header = signature_header(BODY, SECRET, timestamp=1_700_000_000)
    with pytest.raises(TimestampOutsideTolerance):
        verify_signature(BODY, header, SECRET, now=1_700_000_000 + skew)


def test_tolerance_is_configurable() -> None:
    header = signature_header(BODY, SECRET, timestamp=1_700_000_000)
    assert verify_signature(BODY, header, SECRET, tolerance=4000, now=1_700_003_600)
    with pytest.raises(TimestampOutsideTolerance):
        verify_signature(BODY, header, SECRET, tolerance=10, now=1_700_000_011)


@pytest.mark.parametrize(
    "header",
    [None, "", "garbage", "t=abc,s=00", "s=00", "t=123", "t=-5,s=00", "t=1 2,s=00"],
)
def test_malformed_headers_raise_a_clear_error(header: str | None) -> None:
    with pytest.raises(MalformedSignatureHeader):
        verify_signature(BODY, header, SECRET)


def test_non_ascii_signature_is_a_mismatch_not_a_crash() -> None:
    header = f"t={int(time.time())},s=ünïcode"
    with pytest.raises(SignatureMismatch):
        verify_signature(BODY, header, SECRET)


def test_one_matching_signature_among_several_is_accepted() -> None:
    good = signature_header(BODY, SECRET)
    t, s = good.split(",")
    assert verify_signature(BODY, f"{t},s=deadbeef,{s}", SECRET)


def test_all_errors_share_one_base_class_for_receivers() -> None:
    for exc in (MalformedSignatureHeader, TimestampOutsideTolerance, SignatureMismatch):
        assert issubclass(exc, SignatureError)
    with pytest.raises(SignatureError):
        verify_signature(BODY, signature_header(BODY, SECRET), "")


def test_verify_module_is_standalone_and_copyable() -> None:
    """A client application copies the file: it may import the standard library only."""
    tree = ast.parse(Path(verify_module.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= {"__future__", "hashlib", "hmac", "time"}
