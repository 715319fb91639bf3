"""The one place requests are made: the API key, the `{data, error}` envelope, errors, and bounded retries.

Only 429 and 503 are retried: both mean Roster did not act on the request (too many requests; the database
unreachable), so sending it again is safe for every method. Each retry waits what `Retry-After` says
(seconds or an HTTP date), at most `max_retry_wait`; without the header it backs off 0.5, 1, 2 … seconds.
Nothing else is retried: a timeout or a dropped connection may have reached Roster, and a second POST could
act twice.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Callable, NamedTuple, Optional
from urllib.parse import quote

import httpx

from roster_client._version import __version__
from roster_client.errors import RosterError, error_for

RETRIED_STATUSES = (429, 503)
REQUEST_ID_HEADER = "X-Request-Id"


class Answer(NamedTuple):
    status: int
    body: dict
    headers: httpx.Headers


def segment(value: object) -> str:
    """An id as one path segment (a slash or a question mark in it cannot reach another route)."""
    return quote(str(value), safe="")


def query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return iso_utc(value)
    return str(value)


def iso_utc(moment: datetime) -> str:
    """Roster's time format (UTC, milliseconds, Z); a naive datetime is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def retry_after_seconds(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Retry-After as seconds to wait (RFC 9110 §10.2.3: delay-seconds or an HTTP date); None if absent or
    unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class Transport:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        timeout: float,
        max_retries: int,
        max_retry_wait: float,
        http_client: Optional[httpx.Client],
        sleep: Callable[[float], None],
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http or https address, such as https://roster.example.com")
        if not api_key:
            raise ValueError("an API key is needed: pass api_key or set ROSTER_API_KEY")
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.sleep = sleep
        self._owns_client = http_client is None
        self.http = http_client if http_client is not None else httpx.Client(timeout=timeout)
        self.headers = {
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json",
            "User-Agent": f"roster-client-python/{__version__}",
        }

    def close(self) -> None:
        if self._owns_client:
            self.http.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Optional[Mapping[str, Any]] = None,
        body: Optional[Mapping[str, Any]] = None,
    ) -> Answer:
        """One request, retried on 429/503; a 2xx answer's envelope, or the RosterError of its status."""
        query = {name: query_value(value) for name, value in (params or {}).items() if value is not None}
        attempt = 0
        while True:
            try:
                response = self.http.request(
                    method, self.base_url + path, params=query, json=body, headers=self.headers
                )
            except httpx.HTTPError as exc:
                raise RosterError(f"no answer from Roster: {exc}") from exc
            if response.status_code in RETRIED_STATUSES and attempt < self.max_retries:
                wait = retry_after_seconds(response.headers.get("Retry-After"))
                if wait is None:
                    wait = 0.5 * 2**attempt
                self.sleep(min(wait, self.max_retry_wait))
                attempt += 1
                continue
            return _answer(response)


def _answer(response: httpx.Response) -> Answer:
    request_id = response.headers.get(REQUEST_ID_HEADER)
    if response.status_code == 204:  # No Content (RFC 9110 §15.3.5): a success without an envelope
        return Answer(204, {"data": None, "error": None}, response.headers)
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        text = response.text[:200] if response.content else response.reason_phrase
        raise error_for(response.status_code, f"unexpected answer: {text}", request_id)
    if not 200 <= response.status_code < 300:
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        raise error_for(response.status_code, str(message or response.reason_phrase), request_id)
    return Answer(response.status_code, body, response.headers)


class Namespace:
    """A group of methods on Roster (directories, users, …): each method calls one route through `_t`."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport
