"""A minimal HTTP/1.1 client on a socket, for plain-http masters.

`http.client` pulls in the email package and compiles dozens of regular expressions:
about 75 ms of every trial's start, which is most of what a short trial costs. The trial
side needs only JSON requests with Content-Length bodies over keep-alive connections.
"""

from __future__ import annotations

import socket
from typing import Any


class WireError(OSError):
    """The connection broke or the answer was not HTTP."""


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def getheader(self, name: str, default: str = "") -> str:
        return self.headers.get(name.lower(), default)


class WireConnection:
    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self._reader: Any = None

    def _open(self) -> None:
        self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._reader = self.sock.makefile("rb")

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        if self.sock is not None:
            self.sock.close()
        self.sock = self._reader = None

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> Response:
        if self.sock is None:
            self._open()
        assert self.sock is not None and self._reader is not None
        self.sock.settimeout(self.timeout)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        lines.append(f"Content-Length: {len(body or b'')}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))
        return self._read_response()

    def _read_response(self) -> Response:
        reader = self._reader
        assert reader is not None
        status_line = reader.readline(65537)
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise WireError(f"not an HTTP answer: {status_line[:100]!r}")
        headers: dict[str, str] = {}
        while True:
            line = reader.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = self._read_chunked()
        else:
            length = int(headers.get("content-length", "0"))
            body = reader.read(length)
            if len(body) != length:
                raise WireError("the connection closed in the middle of an answer")
        return Response(int(parts[1]), headers, body)

    def _read_chunked(self) -> bytes:
        reader = self._reader
        assert reader is not None
        chunks: list[bytes] = []
        while True:
            size = int(reader.readline(65537).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                reader.readline(65537)
                return b"".join(chunks)
            chunk = reader.read(size)
            if len(chunk) != size:
                raise WireError("the connection closed in the middle of an answer")
            chunks.append(chunk)
            reader.readline(65537)
