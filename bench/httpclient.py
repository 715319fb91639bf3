"""A minimal keep-alive HTTP/1.1 client: one `http.client` connection per worker thread.

Kept on the stdlib on purpose: the load generator shares 2 cores with both servers, so every
microsecond it spends per request is taken from the system under test. `http.client` plus orjson
costs well under 0.1 ms per request here.
"""

from __future__ import annotations

import http.client
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

# Errors that mean "the server closed a connection we thought was still open": safe to retry once
# on a fresh connection, because nothing was read from the server (it never saw, or never answered).
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, http.client.BadStatusLine)


@dataclass(slots=True)
class Response:
    status: int
    body: bytes
    headers: http.client.HTTPMessage
    seconds: float

    def json(self) -> Any:
        return orjson.loads(self.body) if self.body else None


class Client:
    """One connection, reused while the server keeps it open (Node does; gunicorn sync workers do not)."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 30.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"only http:// base URLs are supported, got {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.headers = {"Accept": "application/scim+json, application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self._conn: http.client.HTTPConnection | None = None
        self.connects = 0

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json") -> Response:
        data = None if body is None else orjson.dumps(body)
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = content_type
        url = self.prefix + path
        started = time.perf_counter()
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            reused = self._conn.sock is not None
            try:
                self._conn.request(method, url, body=data, headers=headers)
                if not reused:
                    self.connects += 1
                resp = self._conn.getresponse()
                payload = resp.read()
            except _STALE:
                self.close()
                if attempt or not reused:
                    raise
                continue
            except Exception:
                self.close()
                raise
            if resp.will_close:
                self.close()
            return Response(resp.status, payload, resp.headers, time.perf_counter() - started)
        raise AssertionError("unreachable")  # pragma: no cover
