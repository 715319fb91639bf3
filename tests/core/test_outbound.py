"""The outbound-address guard (core/outbound.py): save-time webhook URL checks and the shared address policy
(interop S1, S2)."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from core import outbound
from core.errors import ValidationFailed
from core.outbound import address_is_public, validate_webhook_url
from directories.models import Directory
from directories.services import directory_create
from tests.actors import TEST_ACTOR

REFUSED_HOSTS = [
    "127.0.0.1",  # loopback
    "127.1",  # short form inet_aton accepts
    "2130706433",  # decimal 127.0.0.1
    "017700000001",  # octal 127.0.0.1
    "0177.0.0.1",  # dotted octal
    "0x7f.0.0.1",  # hex
    "localhost",  # resolves to loopback
    "10.1.2.3",
    "172.16.5.4",
    "192.168.0.10",
    "169.254.169.254",  # cloud metadata (link-local)
    "100.64.0.1",  # CGNAT: is_private is False for it
    "100.127.255.254",
    "0.0.0.0",
    "0.1.2.3",
    "224.0.0.1",  # multicast
    "239.255.255.250",
    "240.0.0.1",  # reserved
    "255.255.255.255",
    "[::1]",
    "[::]",
    "[fc00::1]",
    "[fd12:3456::1]",
    "[fe80::1]",
    "[ff02::1]",  # IPv6 multicast
    "[::ffff:127.0.0.1]",  # IPv4-mapped
    "[::ffff:169.254.169.254]",
    "[::ffff:a00:1]",  # mapped 10.0.0.1, hex form
    "[64:ff9b::7f00:1]",  # NAT64 of 127.0.0.1 (Python calls it global)
    "[64:ff9b::a9fe:a9fe]",  # NAT64 of 169.254.169.254
    "[2002:7f00:1::1]",  # 6to4 of 127.0.0.1
    "[2002:a9fe:a9fe::]",  # 6to4 of 169.254.169.254
    "[::7f00:1]",  # deprecated IPv4-compatible form
]


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_non_public_endpoints_are_refused_at_save_time_without_naming_the_address(host: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        validate_webhook_url(f"https://{host}/hooks")
    message = info.value.message
    assert "blocked: non-public address" in message
    assert host.strip("[]") not in message
    assert info.value.field == "webhook_url"


@pytest.mark.parametrize(
    "host",
    [
        "93.184.216.34",
        "8.8.8.8",
        "[2606:4700:4700::1111]",
        "[64:ff9b::808:808]",  # NAT64 of 8.8.8.8
        "[2002:808:808::1]",  # 6to4 of 8.8.8.8
        "[::ffff:8.8.8.8]",
    ],
)
def test_public_addresses_are_accepted(host: str) -> None:
    validate_webhook_url(f"https://{host}/hooks")


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/x",
        "file:///etc/passwd",
        "gopher://example.com/",
        "javascript:alert(1)",
        "https:///nohost",
        "https://user:pass@example.com/hooks",
        "https://exa mple.com/",
        "https://example.com:99999/",
        "",
        "not a url",
    ],
)
def test_malformed_or_non_http_urls_are_refused(url: str) -> None:
    with pytest.raises(ValidationFailed):
        validate_webhook_url(url)


def test_hostname_resolving_to_a_private_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_getaddrinfo(host, port, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port))]

    monkeypatch.setattr(outbound.socket, "getaddrinfo", fake_getaddrinfo)
    with pytest.raises(ValidationFailed) as info:
        validate_webhook_url("https://hooks.customer.example/roster")
    assert "10.0.0.7" not in info.value.message


def test_hostname_with_any_private_answer_among_public_ones_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_getaddrinfo(host, port, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", port, 0, 0)),
        ]

    monkeypatch.setattr(outbound.socket, "getaddrinfo", fake_getaddrinfo)
    with pytest.raises(ValidationFailed):
        validate_webhook_url("https://hooks.customer.example/roster")


def test_unresolvable_hostname_is_accepted_and_left_to_the_send_time_check() -> None:
    validate_webhook_url("https://hooks.roster-test.invalid/roster")


def test_private_networks_setting_turns_the_address_policy_off(settings) -> None:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    validate_webhook_url("http://127.0.0.1:8000/hooks")
    with pytest.raises(ValidationFailed):
        validate_webhook_url("ftp://127.0.0.1/hooks")  # the scheme rule still holds


@pytest.mark.django_db
def test_directory_create_refuses_a_metadata_endpoint_and_stores_nothing() -> None:
    with pytest.raises(ValidationFailed) as info:
        directory_create(
            actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm", "webhook_url": "http://169.254.169.254/latest"}
        )
    assert "blocked: non-public address" in info.value.message
    assert not Directory.objects.exists()


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("100.64.0.1", False),
        ("64:ff9b::7f00:1", False),
        ("64:ff9b::808:808", True),
        ("2002:c0a8:101::1", False),
        ("::ffff:10.0.0.1", False),
        ("2001:db8::1", False),  # documentation range
        ("192.0.2.1", False),  # TEST-NET-1
    ],
)
def test_address_policy(address: str, public: bool) -> None:
    assert address_is_public(ipaddress.ip_address(address)) is public
