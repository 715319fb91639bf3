"""core.crypto: secrets sealed under DB_ENCRYPTION_KEY, opened again, and refused under another key."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from core import crypto


@override_settings(DB_ENCRYPTION_KEY="core-test-key-one-with-entropy-0123456789")
def test_a_sealed_value_opens_again_and_does_not_show_the_secret() -> None:
    sealed = crypto.seal("the-secret")
    assert sealed.startswith(crypto.PREFIX) and "the-secret" not in sealed
    assert crypto.unseal(sealed) == "the-secret"
    assert crypto.unseal("stored before encryption was on") == "stored before encryption was on"


def test_another_key_is_refused_every_time_and_the_right_one_still_opens() -> None:
    with override_settings(DB_ENCRYPTION_KEY="core-test-key-one-with-entropy-0123456789"):
        sealed = crypto.seal("the-secret")
    with override_settings(DB_ENCRYPTION_KEY="core-test-key-two-with-entropy-0123456789"):
        for _ in range(2):  # a refusal is not remembered as a result
            with pytest.raises(ImproperlyConfigured, match="cannot be decrypted"):
                crypto.unseal(sealed)
    with override_settings(DB_ENCRYPTION_KEY=None):
        with pytest.raises(ImproperlyConfigured, match="not set"):
            crypto.unseal(sealed)
    with override_settings(DB_ENCRYPTION_KEY="core-test-key-one-with-entropy-0123456789"):
        assert crypto.unseal(sealed) == "the-secret"
