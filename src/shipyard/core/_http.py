"""JSON over http.client, for the trial side: no httpx, no urllib.request (import time).

One keep-alive connection per thread (the metric sender and the signal poller each have
their own). Transport failures and 5xx answers raise MasterUnavailable, which callers retry;
4xx answers raise the typed error the master named.
"""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any
from urllib.parse import urlsplit

from shipyard.common.errors import ERRORS_BY_KIND, InvalidRequest, MasterUnavailable, ShipyardError

DEFAULT_TIMEOUT_S = 30.0


class JsonHttp:
    """Talks JSON to one master. ``request`` is safe to call from several threads."""

    def __init__(self, base_url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidRequest(
                f"master url {base_url!r} must look like http://host:port (from SHIPYARD_MASTER)"
            )
        self.base_url = base_url.rstrip("/")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._timeout_s = timeout_s
        self._local = threading.local()

    def _connection(self, timeout_s: float) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._scheme == "https":
                conn = http.client.HTTPSConnection(self._host, self._port, timeout=timeout_s)
            else:
                conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout_s)
            self._local.conn = conn
        conn.timeout = timeout_s
        if conn.sock is not None:
            conn.sock.settimeout(timeout_s)
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def close(self) -> None:
        """Close the calling thread's connection."""
        self._drop_connection()

    def request(
        self, method: str, path: str, body: Any = None, *, timeout_s: float | None = None
    ) -> Any:
        """Send one request and return the decoded JSON answer (NaN and Infinity allowed)."""
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        url = f"{self.base_url}{path}"
        try:
            conn = self._connection(self._timeout_s if timeout_s is None else timeout_s)
            conn.request(method, self._prefix + path, body=payload, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as exc:
            # The connection may be half-dead (master restarted): start a new one next time.
            self._drop_connection()
            raise MasterUnavailable(f"{method} {url} failed: {exc!r}") from exc
        if response.getheader("Connection", "").lower() == "close":
            self._drop_connection()
        status = response.status
        try:
            answer = json.loads(raw) if raw else None
        except ValueError:
            answer = None
            if status < 400:
                raise MasterUnavailable(
                    f"{method} {url}: the answer is not JSON: {raw[:200]!r}"
                ) from None
        if status >= 500:
            raise MasterUnavailable(f"{method} {url} answered {status}: {_message(answer, raw)}")
        if status >= 400:
            raise _typed_error(status, answer, raw, f"{method} {url}")
        return answer


def _message(answer: Any, raw: bytes) -> str:
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        return str(answer["error"].get("message"))
    return raw[:500].decode(errors="replace")


def _typed_error(status: int, answer: Any, raw: bytes, what: str) -> ShipyardError:
    error = answer.get("error") if isinstance(answer, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    cls = ERRORS_BY_KIND.get(str(kind), InvalidRequest if status < 500 else ShipyardError)
    details = error.get("details") if isinstance(error, dict) else None
    return cls(
        f"{what} answered {status}: {_message(answer, raw)}",
        details if isinstance(details, list) else None,
    )
