"""The receiver's signature checks accept exactly what each sender signs, and nothing else."""

from __future__ import annotations

import hashlib
import hmac
import time

from bench.signatures import sign, verify

BODY = b'{"event":"user.created","data":{"id":"1"}}'


def test_roster_signature_signed_with_seconds_is_valid() -> None:
    now = time.time()
    t = str(int(now))
    digest = hmac.new(b"s3cret", f"{t}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert verify(scheme="roster", secret="s3cret", header=f"t={t},s={digest}", body=BODY, now=now) == (True, "")


def test_jackson_signature_uses_milliseconds() -> None:
    now = 1_800_000_000.5
    header = sign(scheme="jackson", secret="k", body=BODY, timestamp=now)
    assert header.startswith("t=1800000000500,")
    assert verify(scheme="jackson", secret="k", header=header, body=BODY, now=now)[0]
    # Read as seconds, a millisecond timestamp is far in the future: the schemes are not interchangeable.
    assert verify(scheme="roster", secret="k", header=header, body=BODY, now=now) == (
        False,
        "timestamp outside tolerance",
    )


def test_rejects_wrong_secret_changed_body_and_bad_headers() -> None:
    header = sign(scheme="roster", secret="right", body=BODY)
    assert verify(scheme="roster", secret="wrong", header=header, body=BODY) == (False, "signature mismatch")
    assert verify(scheme="roster", secret="right", header=header, body=BODY + b" ") == (False, "signature mismatch")
    assert verify(scheme="roster", secret="right", header=None, body=BODY) == (False, "missing signature header")
    assert verify(scheme="roster", secret="right", header="garbage", body=BODY) == (
        False,
        "malformed signature header",
    )
    assert verify(scheme="roster", secret="right", header="t=abc,s=00", body=BODY) == (
        False,
        "malformed signature header",
    )
    assert verify(scheme="jackson", secret="right", header="t=abc,s=00", body=BODY) == (
        False,
        "timestamp is not an integer",
    )


def test_rejects_a_stale_timestamp() -> None:
    old = time.time() - 600
    header = sign(scheme="roster", secret="k", body=BODY, timestamp=old)
    assert verify(scheme="roster", secret="k", header=header, body=BODY) == (False, "timestamp outside tolerance")
    assert verify(scheme="roster", secret="k", header=header, body=BODY, tolerance=900)[0]
