"""HTTP to the master's REST API, with its failures turned into Shipyard's typed errors."""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from shipyard.client import credentials
from shipyard.client.master_url import resolve_master_url
from shipyard.common.errors import ERRORS_BY_KIND, MasterUnavailable, ShipyardError

API_PREFIX = "/api/v1"


class Session:
    """One connection pool to one master. Paths are relative to /api/v1."""

    def __init__(
        self, master_url: str | None = None, *, timeout_s: float = 30.0, token: str | None = None
    ) -> None:
        self.url = resolve_master_url(master_url)
        self.timeout_s = timeout_s
        # The token: given, or SHIPYARD_TOKEN, or the one kept for this master (credentials).
        token = token or credentials.token_for(self.url)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # trust_env=False: a proxy from the environment must not sit between us and a master
        # that is usually on 127.0.0.1. SHIPYARD_CA_CERT: a master's self-signed certificate.
        self._http = httpx.Client(
            base_url=self.url + API_PREFIX,
            timeout=timeout_s,
            trust_env=False,
            headers=headers,
            verify=_verify(self.url),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def get(self, path: str, *, params: dict | None = None, timeout_s: float | None = None) -> Any:
        return self._send("GET", path, params=_drop_none(params), timeout_s=timeout_s).json()

    def get_with_headers(
        self, path: str, *, params: dict | None = None
    ) -> tuple[Any, httpx.Headers]:
        """A GET's JSON body and its headers (e.g. a list's X-Total-Count)."""
        response = self._send("GET", path, params=_drop_none(params))
        return response.json(), response.headers

    def post(
        self,
        path: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> Any:
        headers = {"Content-Type": content_type} if content_type else None
        response = self._send("POST", path, json=json, content=content, headers=headers)
        return response.json() if response.content else None

    def patch(self, path: str, *, json: Any = None) -> Any:
        response = self._send("PATCH", path, json=json)
        return response.json() if response.content else None

    def put(self, path: str, *, json: Any = None) -> Any:
        response = self._send("PUT", path, json=json)
        return response.json() if response.content else None

    def delete(self, path: str) -> Any:
        response = self._send("DELETE", path)
        return response.json() if response.content else None

    @contextmanager
    def stream(self, path: str) -> Iterator[httpx.Response]:
        """A streamed GET (for downloads); the body is read by the caller."""
        try:
            with self._http.stream("GET", path) as response:
                if response.is_error:
                    response.read()
                    raise _error_from_response(response)
                yield response
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from exc

    def _send(self, method: str, path: str, *, timeout_s: float | None = None, **kwargs: Any):
        timeout = self.timeout_s if timeout_s is None else timeout_s
        try:
            response = self._http.request(method, path, timeout=timeout, **kwargs)
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from exc
        if response.is_error:
            raise _error_from_response(response)
        return response

    def _unavailable(self, exc: httpx.TransportError) -> MasterUnavailable:
        if isinstance(exc, httpx.TimeoutException):
            return MasterUnavailable(
                f"the Shipyard master at {self.url} did not answer in time ({type(exc).__name__})"
            )
        if "CERTIFICATE_VERIFY_FAILED" in str(exc):
            return MasterUnavailable(
                f"the certificate of the master at {self.url} is not trusted ({exc}); "
                "set SHIPYARD_CA_CERT to the certificate file if it is self-signed"
            )
        return MasterUnavailable(
            f"cannot reach the Shipyard master at {self.url}; start it with `shipyard up`"
        )


def _error_from_response(response: httpx.Response) -> ShipyardError:
    """The master's {"error": {type, message, details}} as the matching exception class."""
    request = response.request
    where = f"{request.method} {request.url.path}"
    try:
        error = response.json()["error"]
        cls = ERRORS_BY_KIND.get(error["type"], ShipyardError)
        return cls(str(error["message"]), list(error.get("details") or []))
    except (ValueError, KeyError, TypeError):
        text = response.text.strip()[:300] or response.reason_phrase
        return ShipyardError(f"the master answered HTTP {response.status_code} to {where}: {text}")


def _verify(url: str) -> ssl.SSLContext | bool:
    ca_file = os.environ.get("SHIPYARD_CA_CERT")
    if ca_file:
        return ssl.create_default_context(cafile=ca_file)
    if url.startswith("http://"):
        # Plain HTTP, and redirects are not followed: no TLS is ever made. A context that
        # trusts no one (it would refuse any https) costs nothing; loading the CA bundle
        # that `True` asks for took a tenth of a second of every CLI command.
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return True


def _drop_none(params: dict | None) -> dict | None:
    return None if params is None else {k: v for k, v in params.items() if v is not None}
