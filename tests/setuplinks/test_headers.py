"""SETUP_FRAME_ANCESTORS (contract §2, §3.1): checked at start-up, and what the setup page's CSP says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from setuplinks.headers import content_security_policy, frame_ancestors_check, is_setup_path

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("raw", "sources"),
    [
        ("", ("'none'",)),
        ("'none'", ("'none'",)),
        ("'self'", ("'self'",)),
        ("https://app.example.com", ("https://app.example.com",)),
        ("https://App.Example.com/", ("https://app.example.com",)),
        ("'self', https://app.example.com:8443", ("'self'", "https://app.example.com:8443")),
        ("https://a.example.com https://b.example.com", ("https://a.example.com", "https://b.example.com")),
        ("https://*.example.com", ("https://*.example.com",)),
        ("http://localhost:3000", ("http://localhost:3000",)),
        ("https://[::1]:8443", ("https://[::1]:8443",)),
        ("https://a.example.com,https://a.example.com", ("https://a.example.com",)),
    ],
)
def test_frame_ancestors_accepts_none_self_and_origins(raw: str, sources: tuple[str, ...]) -> None:
    assert frame_ancestors_check(raw) == sources


@pytest.mark.parametrize(
    "raw",
    [
        "*",
        "https://*",
        "ftp://files.example.com",
        "app.example.com",
        "https://app.example.com/settings",
        "https://app.example.com;script-src *",
        "https://app.example.com:99999",
        "'unsafe-inline'",
        "'none' https://app.example.com",
        "javascript:alert(1)",
        "https://exa mple.com",
    ],
)
def test_frame_ancestors_refuses_anything_else_naming_the_setting(raw: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="SETUP_FRAME_ANCESTORS"):
        frame_ancestors_check(raw)


def test_the_csp_allows_only_roster_and_the_configured_frames() -> None:
    csp = content_security_policy(("'self'", "https://app.example.com"))
    directives = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    assert directives == {
        "default-src": "'none'",
        "script-src": "'self'",
        "style-src": "'self'",
        "img-src": "'self' data:",
        "connect-src": "'self'",
        "form-action": "'self'",
        "base-uri": "'none'",
        "frame-ancestors": "'self' https://app.example.com",
    }


def test_setup_paths_are_told_from_others() -> None:
    assert is_setup_path("/setup") and is_setup_path("/setup/abc") and is_setup_path("/setup/")
    assert not is_setup_path("/setupx") and not is_setup_path("/portal/setup") and not is_setup_path("/static/setup/x")


def _settings_value(value: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SETUP_FRAME_ANCESTORS"}
    env.update({"SECRET_KEY": "x" * 50, "DEBUG": "false", "DJANGO_SETTINGS_MODULE": "config.settings"})
    if value is not None:
        env["SETUP_FRAME_ANCESTORS"] = value
    code = "import config.settings as s; print(repr(s.SETUP_FRAME_ANCESTORS))"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)


def test_the_setting_is_read_and_checked_at_start_up() -> None:
    assert _settings_value(None).stdout.strip().splitlines()[-1] == "(\"'none'\",)"
    given = _settings_value("https://app.example.com, 'self'")
    assert given.stdout.strip().splitlines()[-1] == "('https://app.example.com', \"'self'\")"
    refused = _settings_value("*")
    assert refused.returncode != 0
    assert "ImproperlyConfigured: SETUP_FRAME_ANCESTORS: '*' is not an origin" in refused.stderr
