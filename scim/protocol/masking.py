"""What the SCIM request log keeps of a request's bodies and query (contract §4.1): text, capped, with
every password value replaced by "***" (RFC 7643 §7: `password` is never returned or logged).

A JSON body is parsed and walked: the value of any attribute named `password` (in any case, also with a
schema URN before it, e.g. `urn:ietf:params:scim:schemas:core:2.0:User:password`) is masked, so is the
`value` of a PATCH operation whose `path` is the password, and a password comparison inside a `filter`
(a `.search` body). A body that is not JSON (cut, malformed, binary, a form) is kept as text and
masked by pattern: `"password": …`, the `value`s of a text that names the password as a PATCH path,
`password=…`, and filter comparisons. Masking comes before the cap, so a cut never reveals what the
mask would have hidden. No header is ever kept.

The token endpoint of a directory's OAuth client (scim/http/token_endpoint.py) is logged like a SCIM request: its
form body with the value of `client_secret` masked (`masked_form`), its answer with the access token
masked before it gets here.
"""

from __future__ import annotations

import codecs
import re
from typing import Any
from urllib.parse import unquote_plus, unquote_to_bytes

import orjson

MASK = "***"
REQUEST_BODY_LIMIT = 16 * 1024
RESPONSE_BODY_LIMIT = 4 * 1024
QUERY_LIMIT = 8 * 1024
TEXT_LIMIT = 1024  # detail, user agent

_OPERATORS = r"(?:eq|ne|co|sw|ew|gt|ge|lt|le)"
# A password comparison in a filter: the attribute (maybe after a URN), an operator, then a value: a
# JSON string, a string whose quotes are escaped (a filter inside JSON text), or a bare word.
_FILTER_PASSWORD = re.compile(
    r"((?:[\w.:-]*:)?password\s+" + _OPERATORS + r"\s+)"
    r'(\\"(?:(?!\\").)*(?:\\")?|"(?:[^"\\]|\\.)*"?|[^\s)\]"\\]+)',
    re.IGNORECASE | re.DOTALL,
)
# In text that is not JSON: `"password": <value>`, and the values of a PATCH that names the password.
_JSON_PASSWORD = re.compile(
    r'("(?:[^"\\]*:)?password"\s*:\s*)("(?:[^"\\]|\\.)*"?|\{[^}]*\}?|\[[^\]]*\]?|[^\s,}\]]*)', re.IGNORECASE
)
_PATCH_PASSWORD_PATH = re.compile(r'"path"\s*:\s*"\s*(?:[^"\\]*:)?password\s*"', re.IGNORECASE)
_PATCH_VALUE = re.compile(r'("value"\s*:\s*)("(?:[^"\\]|\\.)*"?|\{[^}]*\}?|\[[^\]]*\]?|[^\s,}\]]*)', re.IGNORECASE)
# Form or query style: `password=<value>`.
_FORM_PASSWORD = re.compile(r"((?:^|[&;\s?])(?:[\w.:-]*:)?password=)[^&;\s]*", re.IGNORECASE)


def _is_password(name: Any) -> bool:
    if not isinstance(name, str):
        return False
    name = name.strip().lower()
    return name == "password" or name.endswith(":password")


def masked_document(document: Any) -> Any:
    """`document` (parsed JSON, changed in place and returned) with every password value masked."""
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(child for child in item if isinstance(child, dict | list))
            continue
        if not isinstance(item, dict):
            continue
        password_path = _is_password(item.get("path"))  # a PATCH operation on the password
        for key, value in item.items():
            lowered = key.lower() if isinstance(key, str) else key
            if _is_password(key) or (password_path and lowered == "value"):
                item[key] = MASK
            elif lowered == "filter" and isinstance(value, str):
                item[key] = masked_filter(value)
            elif isinstance(value, dict | list):
                stack.append(value)
    return document


def masked_filter(text: str) -> str:
    return _FILTER_PASSWORD.sub(r'\1"' + MASK + '"', text)


def masked_text(text: str) -> str:
    """Text that is not a JSON document, masked by pattern."""
    text = _JSON_PASSWORD.sub(r'\1"' + MASK + '"', text)
    if _PATCH_PASSWORD_PATH.search(text):
        text = _PATCH_VALUE.sub(r'\1"' + MASK + '"', text)
    text = _FORM_PASSWORD.sub(r"\1" + MASK, text)
    return masked_filter(text)


# The form parameters whose values are credentials (RFC 6749 §2.3.1 client_secret_post).
_FORM_SECRETS = frozenset({b"client_secret", b"password"})


def masked_form(raw: bytes) -> bytes:
    """A form-urlencoded body with the value of every credential parameter replaced by ***: its name
    compared once decoded (`client%5Fsecret` is client_secret too), whatever else is wrong with the body."""
    pairs = raw.split(b"&")
    for i, pair in enumerate(pairs):
        name, eq, _value = pair.partition(b"=")
        if eq and unquote_to_bytes(name.replace(b"+", b" ")).strip().lower() in _FORM_SECRETS:
            pairs[i] = name + b"=" + MASK.encode()
    return b"&".join(pairs)


def storable(raw: bytes, limit: int) -> tuple[str, bool]:
    """The first `limit` bytes as text a database column holds: UTF-8 (other bytes become U+FFFD, a
    character the cut splits is left out), NUL as U+FFFD; and whether anything was cut."""
    if len(raw) <= limit:
        # Nothing cut (every request's path and user agent, most bodies): the one-shot decode, which reads
        # the same as the incremental decoder's final call and costs a seventh of building that decoder.
        text = raw.decode("utf-8", "replace")
    else:
        text = codecs.getincrementaldecoder("utf-8")("replace").decode(raw[:limit], final=False)
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    return text, len(raw) > limit


def text_capped(text: str, limit: int = TEXT_LIMIT) -> str:
    """A short text (a detail, a user agent) as a column holds it, at most `limit` bytes."""
    return storable(text.encode("utf-8", "replace"), limit)[0]


def request_body_text(raw: bytes) -> tuple[str, bool]:
    """The request body as the log keeps it: masked, then cut to REQUEST_BODY_LIMIT; and whether cut."""
    if not raw:
        return "", False
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        # Not JSON (or JSON orjson refuses): cut a little past the limit first, so a huge body costs no
        # more than a small one, mask, then cut to the limit.
        text, cut = storable(raw, REQUEST_BODY_LIMIT + 1024)
        masked, cut_again = storable(masked_text(text).encode(), REQUEST_BODY_LIMIT)
        return masked, cut or cut_again
    return storable(orjson.dumps(masked_document(document)), REQUEST_BODY_LIMIT)


def response_body_text(raw: bytes) -> tuple[str, bool]:
    """The response body as the log keeps it (Roster's answers never carry a password)."""
    return storable(raw, RESPONSE_BODY_LIMIT)


def query_text(raw: str) -> str:
    """The query string, decoded as Django decodes it, password comparisons masked, capped."""
    if not raw:
        return ""
    decoded = unquote_plus(raw.encode("iso-8859-1", "replace").decode("utf-8", "replace"), errors="replace")
    return storable(masked_text(decoded).encode("utf-8", "replace"), QUERY_LIMIT)[0]
