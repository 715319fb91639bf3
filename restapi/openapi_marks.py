"""`extend_schema` for the REST views, applied when the OpenAPI document is first built.

drf-spectacular's own `extend_schema` builds a subclass of its AutoSchema the moment it decorates a
method, and importing AutoSchema brings the generator with django.test, unittest and PyYAML into every
web process (each web worker's PSS about 2 MB higher), for a document GET /api/v1/schema builds
rarely. Here the decorator only notes its arguments; restapi.openapi's generator hands every note to
drf-spectacular's decorator before it builds the document, in the order the methods were decorated.
Kept for memory: bench/README.md, "Code kept for speed", "The OpenAPI machinery loaded at the first
document".
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

Method = TypeVar("Method", bound=Callable[..., Any])

_noted: list[tuple[Callable[..., Any], dict[str, Any]]] = []
_applying = threading.Lock()  # two first documents built at once (threads of one worker) apply each note once


def extend_schema(**annotations: Any) -> Callable[[Method], Method]:
    """drf_spectacular.utils.extend_schema's arguments, for a view's method; applied by apply()."""

    def note(method: Method) -> Method:
        _noted.append((method, annotations))
        return method

    return note


def apply() -> None:
    """Hand every note taken so far to drf-spectacular's decorator (once each; the methods keep them)."""
    from drf_spectacular.utils import extend_schema as annotate

    with _applying:
        while _noted:
            method, annotations = _noted.pop(0)
            annotate(**annotations)(method)
