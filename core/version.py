"""Roster's version: what roster_build_info reports, the OpenAPI document's `info.version`, and the version of
both client libraries (clients/python, clients/typescript), which a test keeps equal to this one."""

from __future__ import annotations

VERSION = "1.0.0"
