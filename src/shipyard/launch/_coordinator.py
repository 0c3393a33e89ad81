"""The coordination server behind ``ctx.distributed`` when a trial has several ranks.

A launcher calls ``serve(size=N)`` before it starts the ranks and gives each of them
``SHIPYARD_DIST_ADDR`` (the "host:port" it returns). Each rank keeps one connection and sends
its collectives in order, numbered 1, 2, 3...; the server answers every rank once all ``size``
ranks have sent the same number, with their payloads (opaque bytes) in rank order. The byte
format is in shipyard.common.collective_wire.

Failures end the whole group, so no rank waits forever:
- a rank whose connection closes (it exited or crashed) fails every collective it has not
  reached, at once;
- a rank that does not reach a collective within the timeout its peers sent
  (SHIPYARD_DIST_TIMEOUT_S on their side) fails it: "rank 1 did not reach collective #12
  within 300 s";
- ranks calling different collectives at the same number fail it, naming both.
After a failure every later request gets the same error.

Standard library only: one thread accepts, one thread serves each rank's connection.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

from shipyard.common.collective_wire import (
    COLLECTIVE,
    ERROR,
    FRAME,
    HELLO,
    MAX_FRAME,
    PEER_LEFT,
    decode_request,
    encode_error,
    encode_ok,
)


def serve(size: int, host: str = "127.0.0.1") -> tuple[str, Callable[[], None]]:
    """Start a coordinator for ``size`` ranks on a free port of ``host``, in daemon threads.
    Returns its address ("host:port") and a function that stops it."""
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    listener = socket.create_server((host, 0), backlog=max(16, 2 * size))
    coordinator = _Coordinator(size, listener)
    threading.Thread(
        target=coordinator.accept_loop, name="shipyard-coordinator", daemon=True
    ).start()
    port = listener.getsockname()[1]
    return f"{host}:{port}", coordinator.stop


class _Round:
    """One collective (one sequence number) while its ranks arrive and collect the answer."""

    def __init__(self, seq: int, now: float) -> None:
        self.seq = seq
        self.ops: dict[int, str] = {}
        self.payloads: dict[int, bytes] = {}
        self.deadline = float("inf")
        self.timeout_s = 0.0
        self.replies: dict[str, bytes] | None = None  # once complete: reply bytes by audience
        self.collected = 0
        self.started = now


class _Coordinator:
    def __init__(self, size: int, listener: socket.socket) -> None:
        self.size = size
        self._listener = listener
        self._cond = threading.Condition()
        self._rounds: dict[int, _Round] = {}
        self._connected: dict[int, socket.socket] = {}
        self._left: set[int] = set()
        self._broken: tuple[int, str] | None = None  # (status, message) once the group failed
        self._stopping = False
        self._sockets: set[socket.socket] = set()

    # -- connections --------------------------------------------------------------------

    def accept_loop(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed by stop()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._cond:
                self._sockets.add(conn)
            threading.Thread(
                target=self._serve_connection, args=(conn,), name="shipyard-coord-rank", daemon=True
            ).start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            if self._broken is None:
                self._broken = (PEER_LEFT, "the coordinator was stopped by the launcher")
            sockets = list(self._sockets)
            self._cond.notify_all()
        try:
            self._listener.close()
        except OSError:
            pass
        for conn in sockets:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _serve_connection(self, conn: socket.socket) -> None:
        rank: int | None = None
        try:
            while True:
                body = _recv_frame(conn)
                if body is None:
                    return
                kind, sender, size, seq, timeout_s, op, payload = decode_request(body)
                if kind == HELLO:
                    error = self._hello(conn, sender, size)
                    conn.sendall(encode_error(0, error) if error else encode_ok(0, []))
                    if error:
                        return
                    rank = sender
                elif kind == COLLECTIVE and rank is not None and sender == rank:
                    conn.sendall(self._collective(rank, seq, timeout_s, op, payload))
                else:
                    conn.sendall(encode_error(seq, f"unexpected request (kind {kind})"))
                    return
        except (OSError, ValueError):
            return  # a broken connection or a garbled frame: the rank is gone either way
        finally:
            self._leave(conn, rank)

    def _hello(self, conn: socket.socket, rank: int, size: int) -> str | None:
        if size != self.size:
            return f"rank {rank} says the trial has {size} ranks; the coordinator has {self.size}"
        if not 0 <= rank < self.size:
            return f"rank {rank} is out of range for {self.size} ranks"
        with self._cond:
            if rank in self._connected or rank in self._left:
                return f"rank {rank} is already connected: two processes have SHIPYARD_RANK={rank}"
            self._connected[rank] = conn
        return None

    def _leave(self, conn: socket.socket, rank: int | None) -> None:
        with self._cond:
            self._sockets.discard(conn)
            if rank is not None and self._connected.get(rank) is conn:
                del self._connected[rank]
                self._left.add(rank)
                self._cond.notify_all()
        try:
            conn.close()
        except OSError:
            pass

    # -- collectives --------------------------------------------------------------------

    def _collective(self, rank: int, seq: int, timeout_s: float, op: str, payload: bytes) -> bytes:
        with self._cond:
            if self._broken is not None:
                return encode_error(seq, self._broken[1], status=self._broken[0])
            now = time.monotonic()
            round_ = self._rounds.get(seq)
            if round_ is None:
                round_ = self._rounds[seq] = _Round(seq, now)
            round_.ops[rank] = op
            round_.payloads[rank] = payload
            if now + timeout_s < round_.deadline:
                round_.deadline, round_.timeout_s = now + timeout_s, timeout_s
            if len(round_.payloads) == self.size:
                self._complete(round_)
            while round_.replies is None and self._broken is None:
                self._check_departed(round_)
                remaining = round_.deadline - time.monotonic()
                if self._broken is None and remaining <= 0:
                    missing = [r for r in range(self.size) if r not in round_.payloads]
                    self._fail(
                        f"{_ranks(missing)} did not reach collective #{seq} "
                        f"within {round_.timeout_s:g} s"
                    )
                elif self._broken is None:
                    self._cond.wait(remaining)
            if round_.replies is None:
                assert self._broken is not None
                return encode_error(seq, self._broken[1], status=self._broken[0])
            reply = _pick_reply(round_, rank)
            round_.collected += 1
            if round_.collected == self.size:
                del self._rounds[seq]
            return reply

    def _complete(self, round_: _Round) -> None:
        ops = set(round_.ops.values())
        if len(ops) > 1:
            calls = ", ".join(f"rank {r} called {op}" for r, op in sorted(round_.ops.items()))
            self._fail(
                f"collective #{round_.seq} does not match across ranks: {calls}; every rank "
                "must call the same collectives in the same order"
            )
            return
        (op,) = ops
        payloads = [round_.payloads[r] for r in range(self.size)]
        name, _, root_text = op.partition("/")
        if name == "allgather":
            replies = {"all": encode_ok(round_.seq, payloads)}
        elif name == "barrier":
            replies = {"all": encode_ok(round_.seq, [])}
        elif name in ("broadcast", "gather") and root_text.isdigit():
            root = int(root_text)
            if root >= self.size:
                self._fail(
                    f"collective #{round_.seq}: root {root} is not a rank (size {self.size})"
                )
                return
            if name == "broadcast":
                replies = {"all": encode_ok(round_.seq, [payloads[root]])}
            else:
                replies = {
                    f"root={root}": encode_ok(round_.seq, payloads),
                    "all": encode_ok(round_.seq, []),
                }
        else:
            self._fail(f"collective #{round_.seq}: unknown operation {op!r}")
            return
        round_.replies = replies
        round_.payloads.clear()  # the replies hold the bytes now
        self._cond.notify_all()

    def _check_departed(self, round_: _Round) -> None:
        gone = sorted(r for r in self._left if r not in round_.ops)
        if gone:
            self._fail(
                f"{_ranks(gone)} left before collective #{round_.seq} (its connection closed: "
                "it exited or crashed)",
                status=PEER_LEFT,
            )

    def _fail(self, message: str, *, status: int = ERROR) -> None:
        if self._broken is None:
            self._broken = (status, message)
        self._cond.notify_all()


def _pick_reply(round_: _Round, rank: int) -> bytes:
    assert round_.replies is not None
    return round_.replies.get(f"root={rank}", round_.replies["all"])


def _ranks(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks)


def _recv_frame(conn: socket.socket) -> bytes | None:
    """One frame's body, or None when the peer closed the connection between frames."""
    header = _recv_exact(conn, FRAME.size, eof_ok=True)
    if header is None:
        return None
    (length,) = FRAME.unpack(header)
    if length > MAX_FRAME:
        raise ValueError(f"frame of {length} bytes is too large")
    body = _recv_exact(conn, length, eof_ok=False)
    assert body is not None
    return body


def _recv_exact(conn: socket.socket, count: int, *, eof_ok: bool) -> bytes | None:
    buffer = bytearray(count)
    view = memoryview(buffer)
    received = 0
    while received < count:
        n = conn.recv_into(view[received:])
        if n == 0:
            if eof_ok and received == 0:
                return None
            raise OSError("connection closed in the middle of a frame")
        received += n
    return bytes(buffer)
