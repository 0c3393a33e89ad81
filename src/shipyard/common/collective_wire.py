"""The byte format between a trial's ranks (shipyard.core._collective, the client) and the
coordinator their launcher starts (shipyard.launch._coordinator, the server).

Both ends import it; core and launch are independent layers, so the format lives here.
Bytes in, bytes out, but for read_frame, which reads one frame from a socket it is given.

Every message is a frame: an 8-byte big-endian body length, then the body.

- Request body: ``REQUEST`` (kind, rank, size, seq, timeout_s, len(op)), the op (ASCII),
  then the payload (opaque bytes, a pickle made by the client).
  kind HELLO (seq 0, op "", no payload) is sent once on connecting and answered at once;
  kind COLLECTIVE is answered when every rank has sent the same seq.
  ops: "allgather", "barrier", "broadcast/<root>", "gather/<root>".
- Reply body: ``REPLY`` (status, seq, count), then for OK ``count`` parts, each an 8-byte
  length and its bytes (every rank's payload in rank order for allgather and for the root
  of gather, the root's payload alone for broadcast, none for barrier); for an error, the
  message in UTF-8 (status PEER_LEFT: the collective failed because another rank's
  connection closed, i.e. that rank exited or crashed).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Literal, overload

if TYPE_CHECKING:
    import socket

FRAME = struct.Struct("!Q")
REQUEST = struct.Struct("!BIIQdH")
REPLY = struct.Struct("!BQI")
PART = struct.Struct("!Q")

HELLO = 1
COLLECTIVE = 2

OK = 0
ERROR = 1
PEER_LEFT = 2

# A guard against reading garbage as a length, not a promise: payloads are meant to be small.
MAX_FRAME = 1 << 30


def frame(body: bytes) -> bytes:
    return FRAME.pack(len(body)) + body


@overload
def read_frame(sock: socket.socket, peer: str, *, eof_ok: Literal[False] = False) -> bytes: ...
@overload
def read_frame(sock: socket.socket, peer: str, *, eof_ok: bool) -> bytes | None: ...
def read_frame(sock: socket.socket, peer: str, *, eof_ok: bool = False) -> bytes | None:
    """One frame's body from ``sock`` (``peer`` names the other end in errors). None when
    ``eof_ok`` and the peer closed the connection between frames; OSError for a connection
    closed otherwise, and for a length over MAX_FRAME (garbage, not a frame)."""
    header = _read_exact(sock, FRAME.size, peer, eof_ok=eof_ok)
    if header is None:
        return None
    (length,) = FRAME.unpack(header)
    if length > MAX_FRAME:
        raise OSError(f"{peer} sent a frame of {length} bytes (more than {MAX_FRAME})")
    body = _read_exact(sock, length, peer, eof_ok=False)
    assert body is not None
    return body


def _read_exact(sock: socket.socket, count: int, peer: str, *, eof_ok: bool) -> bytes | None:
    buffer = bytearray(count)
    view = memoryview(buffer)
    received = 0
    while received < count:
        n = sock.recv_into(view[received:])
        if n == 0:
            if eof_ok and received == 0:
                return None
            raise OSError(f"{peer} closed the connection")
        received += n
    return bytes(buffer)


def encode_request(
    kind: int, rank: int, size: int, seq: int, timeout_s: float, op: str, payload: bytes
) -> bytes:
    name = op.encode("ascii")
    return frame(REQUEST.pack(kind, rank, size, seq, timeout_s, len(name)) + name + payload)


def decode_request(body: bytes) -> tuple[int, int, int, int, float, str, bytes]:
    """(kind, rank, size, seq, timeout_s, op, payload)"""
    kind, rank, size, seq, timeout_s, name_len = REQUEST.unpack_from(body)
    start = REQUEST.size
    op = body[start : start + name_len].decode("ascii")
    return kind, rank, size, seq, timeout_s, op, body[start + name_len :]


def encode_ok(seq: int, parts: list[bytes]) -> bytes:
    chunks = [REPLY.pack(OK, seq, len(parts))]
    for part in parts:
        chunks.append(PART.pack(len(part)))
        chunks.append(part)
    return frame(b"".join(chunks))


def encode_error(seq: int, message: str, *, status: int = ERROR) -> bytes:
    return frame(REPLY.pack(status, seq, 0) + message.encode("utf-8"))


def decode_reply(body: bytes) -> tuple[int, int, list[bytes] | str]:
    """(status, seq, parts) for OK, (status, seq, message) otherwise."""
    status, seq, count = REPLY.unpack_from(body)
    offset = REPLY.size
    if status != OK:
        return status, seq, body[offset:].decode("utf-8", "replace")
    view = memoryview(body)
    parts = []
    for _ in range(count):
        (length,) = PART.unpack_from(body, offset)
        offset += PART.size
        parts.append(bytes(view[offset : offset + length]))
        offset += length
    return status, seq, parts
