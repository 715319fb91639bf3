"""`scim.protocol.masking.storable`: what the SCIM request log keeps of bytes (a body, a path, a user agent)."""

from __future__ import annotations

import codecs

from hypothesis import given
from hypothesis import strategies as st

from scim.protocol.masking import storable, text_capped


def _reference(raw: bytes, limit: int) -> tuple[str, bool]:
    """The definition: the first `limit` bytes through an incremental UTF-8 decoder (a character the cut
    splits is left out), bad bytes as U+FFFD, NUL as U+FFFD."""
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(raw[:limit], final=len(raw) <= limit)
    return text.replace("\x00", "\ufffd"), len(raw) > limit


@given(raw=st.binary(max_size=64), limit=st.integers(min_value=0, max_value=70))
def test_storable_is_the_incremental_decoders_text_whatever_the_bytes(raw: bytes, limit: int) -> None:
    assert storable(raw, limit) == _reference(raw, limit)


def test_storable_cuts_on_a_character_and_replaces_nul_and_bad_bytes() -> None:
    assert storable("aé".encode(), 2) == ("a", True)  # the cut splits é: left out, not a U+FFFD
    assert storable("aé".encode(), 3) == ("aé", False)
    assert storable(b"a\x00b\xffc", 10) == ("a\ufffdb\ufffdc", False)
    assert storable(b"", 0) == ("", False)
    assert text_capped("x" * 600, 512) == "x" * 512
