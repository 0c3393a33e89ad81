"""The rank side of the coordinator protocol (shipyard.launch._coordinator; byte format in
shipyard.common.collective_wire): one persistent TCP connection, one collective at a time.

Imported only when a trial has more than one rank. Standard library only.
"""

from __future__ import annotations

import pickle
import socket
import threading
import time
from typing import Any

from shipyard.common.collective_wire import (
    COLLECTIVE,
    HELLO,
    OK,
    PEER_LEFT,
    decode_reply,
    encode_request,
    read_frame,
)
from shipyard.common.errors import InvalidRequest, ShipyardError

# How much longer than the collective timeout a rank waits for the coordinator itself: the
# coordinator answers with a clear error at the timeout; this only catches a dead one.
SOCKET_MARGIN_S = 30.0


class CollectiveError(ShipyardError):
    """A collective of ``ctx.distributed`` failed: a rank did not reach it in time, exited,
    called a different collective, or the coordinator went away. The trial cannot go on."""

    kind = "CollectiveError"

    def __init__(self, message: str, *, peer_left: bool = False) -> None:
        super().__init__(message)
        # True when another rank's exit caused it: that rank's own error is the reason.
        self.peer_left = peer_left


class CollectiveClient:
    def __init__(self, addr: str, rank: int, size: int, timeout_s: float) -> None:
        self.addr = addr
        self.rank = rank
        self.size = size
        self.timeout_s = timeout_s
        self._seq = 0
        self._lock = threading.Lock()
        self._failure: CollectiveError | None = None
        host, _, port = addr.rpartition(":")
        if not host or not port.isdigit():
            raise InvalidRequest(f"SHIPYARD_DIST_ADDR must be host:port, got {addr!r}")
        self._sock = self._connect(host, int(port))
        try:
            self._exchange(HELLO, 0, "", b"", what="connecting")
        except BaseException:
            self._sock.close()
            raise

    def _connect(self, host: str, port: int) -> socket.socket:
        """Retries while the coordinator is not listening yet, up to the timeout."""
        deadline = time.monotonic() + self.timeout_s
        delay = 0.05
        while True:
            try:
                sock = socket.create_connection((host, port), timeout=self.timeout_s)
            except OSError as exc:
                if time.monotonic() + delay > deadline:
                    raise CollectiveError(
                        f"rank {self.rank} cannot reach the trial's coordinator at "
                        f"{self.addr} (SHIPYARD_DIST_ADDR) within {self.timeout_s:g} s: {exc}"
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock

    def call(self, op: str, payload: bytes) -> list[bytes]:
        """Run one collective; returns the parts the coordinator answers with."""
        with self._lock:
            if self._failure is not None:
                raise CollectiveError(self._failure.message, peer_left=self._failure.peer_left)
            self._seq += 1
            try:
                return self._exchange(COLLECTIVE, self._seq, op, payload, what=f"#{self._seq}")
            except CollectiveError as exc:
                self._failure = exc
                raise

    def call_objects(self, op: str, obj: Any, *, send: bool = True) -> list[Any]:
        payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL) if send else b""
        return [pickle.loads(part) for part in self.call(op, payload)]

    def _exchange(self, kind: int, seq: int, op: str, payload: bytes, *, what: str) -> list[bytes]:
        request = encode_request(kind, self.rank, self.size, seq, self.timeout_s, op, payload)
        wait_s = self.timeout_s + SOCKET_MARGIN_S
        try:
            self._sock.settimeout(wait_s)
            self._sock.sendall(request)
            body = read_frame(self._sock, "the coordinator")
        except TimeoutError:
            raise CollectiveError(
                f"rank {self.rank}: no answer from the trial's coordinator at {self.addr} "
                f"for collective {what} within {wait_s:g} s"
            ) from None
        except OSError as exc:
            raise CollectiveError(
                f"rank {self.rank} lost its connection to the trial's coordinator at "
                f"{self.addr} during collective {what} (did the launcher exit?): {exc}"
            ) from None
        status, _seq, result = decode_reply(body)
        if status != OK:
            assert isinstance(result, str)
            raise CollectiveError(result, peer_left=status == PEER_LEFT)
        assert isinstance(result, list)
        return result

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass
