"""A JSON renderer on orjson for the REST API's hot paths (several times faster than json.dumps)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from rest_framework.renderers import BaseRenderer
from rest_framework.utils.encoders import JSONEncoder


class OrjsonRenderer(BaseRenderer):
    media_type = "application/json"
    format = "json"
    charset = None  # JSON is UTF-8 by definition (RFC 8259 §8.1); no charset parameter needed.

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: dict | None = None) -> bytes:
        if data is None:
            return b""
        try:
            return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:
            # `raw` holds whatever JSON an identity provider sent; orjson refuses integers beyond
            # 64 bits, which the standard encoder writes fine.
            return json.dumps(data, cls=JSONEncoder, ensure_ascii=False, separators=(",", ":")).encode()
