"""What Python 3.9 lacks and the generated results name."""

from __future__ import annotations

try:
    from typing import TypeAlias
except ImportError:  # Python 3.9: only ever used as an annotation, which `from __future__` leaves unevaluated
    TypeAlias = object  # type: ignore[misc,assignment]

__all__ = ["TypeAlias"]
