"""Which webhook endpoints Roster may call: http/https only, public addresses only (contract §5, interop S1-S5).

Two checks share one address policy (`address_is_public`):
- at save time, `validate_webhook_url` refuses a URL whose host is, or resolves to, a non-public
  address, so an admin gets a clear 400 at once;
- at send time, `webhooks.transport` resolves the host again, applies the same policy and connects to
  exactly the address it checked, so a DNS answer that changes in between (rebinding) cannot slip
  through. The send-time check is the authoritative one.

`WEBHOOK_ALLOW_PRIVATE_NETWORKS` (default: DEBUG) turns the address policy off for development.
Messages never name the internal address that was found: "blocked: non-public address".
"""

from __future__ import annotations

import ipaddress
import socket
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from urllib.parse import urlsplit

from django.conf import settings

from core.errors import ValidationFailed

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

BLOCKED_MESSAGE = "blocked: non-public address"

# RFC 6052 well-known NAT64 prefix: the last 32 bits are an IPv4 address the translator will reach.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# RFC 3056 6to4: bits 16-48 carry an IPv4 address the relay will reach.
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
# RFC 6598 shared address space (carrier-grade NAT). `is_private` is False for it, so it is named here.
_CGNAT = ipaddress.ip_network("100.64.0.0/10")

# Save-time resolution must not hold an admin's request for long; the send-time check is authoritative.
_SAVE_TIME_DNS_TIMEOUT = 2.0


class BlockedAddress(Exception):
    """The endpoint is, or resolves to, an address Roster refuses to call. Deliberately not an OSError,
    so urllib3/requests do not wrap it (and its message) into their own connection errors."""

    def __init__(self) -> None:
        super().__init__(BLOCKED_MESSAGE)


def address_is_public(ip: IPAddress) -> bool:
    """True when `ip` is a globally routable unicast address that is safe to call from the server.

    `is_global` is the base (interop S2: not `is_private`, which misses 100.64/10), and the address
    forms that embed an IPv4 address are judged by the IPv4 address they lead to.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:  # ::ffff:127.0.0.1 reaches 127.0.0.1
            return address_is_public(ip.ipv4_mapped)
        if ip in _NAT64:  # Python 3.11 calls 64:ff9b::7f00:1 global; it reaches 127.0.0.1 via NAT64
            return address_is_public(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        if ip in _SIX_TO_FOUR:
            return address_is_public(ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF))
    else:
        if ip in _CGNAT:
            return False
    return bool(
        ip.is_global
        and not ip.is_multicast  # 224.0.0.0/4 and ff00::/8 are "global" to ipaddress, never a webhook
        and not ip.is_reserved  # 240/4, and the IPv6 ::/8 block with deprecated IPv4-compatible forms
        and not ip.is_loopback
        and not ip.is_link_local  # 169.254/16 holds cloud metadata services
        and not ip.is_unspecified
        and not ip.is_private
    )


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a host string denotes by itself, including the legacy forms that inet_aton and
    therefore getaddrinfo accept (decimal `2130706433`, octal `0177.0.0.1`, hex `0x7f.1`)."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address getaddrinfo gives for host:port (TCP). Raises socket.gaierror when it fails."""
    literal = parse_ip_literal(host)
    if literal is not None:
        return [literal]
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    out: list[IPAddress] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in out:
            out.append(ip)
    return out


def private_networks_allowed() -> bool:
    return bool(getattr(settings, "WEBHOOK_ALLOW_PRIVATE_NETWORKS", False))


def _resolve_for_save(host: str, port: int) -> list[IPAddress] | None:
    """Resolve with a deadline; None when the name does not resolve (yet) or DNS is slow."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="roster-urlcheck")
    try:
        return pool.submit(resolve, host, port).result(timeout=_SAVE_TIME_DNS_TIMEOUT)
    except (FutureTimeout, OSError, UnicodeError, ValueError):
        return None
    finally:
        pool.shutdown(wait=False)


def validate_webhook_url(url: str, *, field: str = "webhook_url") -> None:
    """Raise ValidationFailed with a message a person can act on when `url` cannot be a webhook endpoint.

    A host name that does not resolve right now is accepted: DNS for a new receiver may not exist yet,
    and the send-time check refuses it later if it then resolves to a non-public address.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValidationFailed(f"{field} must be a URL.", field=field)
    if any(ch.isspace() or ord(ch) < 0x20 for ch in url):
        raise ValidationFailed(f"{field} must not contain spaces or control characters.", field=field)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValidationFailed(f"{field} is not a valid URL.", field=field) from None
    if parts.scheme not in ("http", "https"):
        raise ValidationFailed(f"{field} must be an http or https URL.", field=field)
    if not parts.hostname:
        raise ValidationFailed(f"{field} must include a host name.", field=field)
    if parts.username is not None or parts.password is not None:
        # interop S1: credentials in the URL would be logged and shown; the signature authenticates.
        raise ValidationFailed(f"{field} must not contain a user name or password.", field=field)
    if private_networks_allowed():
        return
    port = port or (443 if parts.scheme == "https" else 80)
    literal = parse_ip_literal(parts.hostname)
    addresses = [literal] if literal is not None else _resolve_for_save(parts.hostname, port)
    if addresses and not all(address_is_public(ip) for ip in addresses):
        raise ValidationFailed(
            f"{field} is {BLOCKED_MESSAGE}: webhook endpoints must be reachable on the public internet.",
            field=field,
        )
