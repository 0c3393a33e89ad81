"""JSON over HTTP for the trial side: no httpx, no urllib.request, and http.client only for
https masters (import time: see _wire.py).

One keep-alive connection per thread (the metric sender and the signal poller each have
their own). Transport failures and 5xx answers raise MasterUnavailable, which callers retry;
4xx answers raise the typed error the master named.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any
from urllib.parse import urlsplit

from shipyard.common.errors import ERRORS_BY_KIND, InvalidRequest, MasterUnavailable, ShipyardError
from shipyard.core._wire import WireConnection

DEFAULT_TIMEOUT_S = 30.0


class JsonHttp:
    """Talks JSON to one master. ``request`` is safe to call from several threads."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        token: str | None = None,
    ) -> None:
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
        # The run's task token (the master gives every run its own), sent on every request.
        token = token or os.environ.get("SHIPYARD_TASK_TOKEN")
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}
        self._ca_file = os.environ.get("SHIPYARD_CA_CERT") or None

    def _connection(self, timeout_s: float) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._scheme == "https":
                import http.client
                import ssl

                context = ssl.create_default_context(cafile=self._ca_file)
                conn = _HttpsConnection(
                    http.client.HTTPSConnection(
                        self._host, self._port, timeout=timeout_s, context=context
                    )
                )
            else:
                conn = WireConnection(self._host, self._port or 80, timeout=timeout_s)
            self._local.conn = conn
        conn.timeout = timeout_s
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
        headers = {"Accept": "application/json", **self._auth}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        what = f"{method} {self.base_url}{path}"
        response = self._send(method, path, payload, headers, timeout_s)
        if response.status >= 400:
            raise _error(response.status, response.body, what)
        try:
            return json.loads(response.body) if response.body else None
        except ValueError:
            raise MasterUnavailable(
                f"{what}: the answer is not JSON: {response.body[:200]!r}"
            ) from None

    def download(self, path: str, *, timeout_s: float | None = None) -> bytes:
        """GET a file the master serves as bytes (a code snapshot), read whole."""
        response = self._send("GET", path, None, dict(self._auth), timeout_s)
        if response.status >= 400:
            raise _error(response.status, response.body, f"GET {self.base_url}{path}")
        return response.body

    def _send(
        self,
        method: str,
        path: str,
        payload: bytes | None,
        headers: dict[str, str],
        timeout_s: float | None,
    ) -> Any:
        try:
            conn = self._connection(self._timeout_s if timeout_s is None else timeout_s)
            response = conn.request(method, self._prefix + path, payload, headers)
        except (OSError, ValueError) as exc:
            # The connection may be half-dead (master restarted): start a new one next time.
            self._drop_connection()
            raise MasterUnavailable(f"{method} {self.base_url}{path} failed: {exc!r}") from exc
        if response.getheader("Connection", "").lower() == "close":
            self._drop_connection()
        return response


def _message(answer: Any, raw: bytes) -> str:
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        return str(answer["error"].get("message"))
    return raw[:500].decode(errors="replace")


def _error(status: int, raw: bytes, what: str) -> ShipyardError:
    """What an answer of 400 or more raises: MasterUnavailable for a 5xx (callers retry),
    else the typed error the master named."""
    try:
        answer = json.loads(raw) if raw else None
    except ValueError:
        answer = None
    if status >= 500:
        return MasterUnavailable(f"{what} answered {status}: {_message(answer, raw)}")
    error = answer.get("error") if isinstance(answer, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    cls = ERRORS_BY_KIND.get(str(kind), InvalidRequest)
    details = error.get("details") if isinstance(error, dict) else None
    return cls(
        f"{what} answered {status}: {_message(answer, raw)}",
        details if isinstance(details, list) else None,
    )


class _HttpsConnection:
    """http.client behind the same small interface as WireConnection."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.timeout = conn.timeout

    def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Any:
        import http.client

        from shipyard.core._wire import Response

        self._conn.timeout = self.timeout
        if self._conn.sock is not None:
            self._conn.sock.settimeout(self.timeout)
        try:
            self._conn.request(method, path, body=body, headers=headers)
            answer = self._conn.getresponse()
            raw = answer.read()
        except http.client.HTTPException as exc:
            raise OSError(str(exc)) from exc
        return Response(answer.status, {k.lower(): v for k, v in answer.getheaders()}, raw)

    def close(self) -> None:
        self._conn.close()
