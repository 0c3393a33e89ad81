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

Groups: a connection names its group in its HELLO's op. "" (what the ranks send) is the
ranks of ``ctx.distributed``; a multi-node trial's node 0 also serves "nodes", the launchers
(one per node), which meet there before starting their ranks (launch/_nodes.py). Each group
has its own size, numbering and failures; one listening port serves both.

Standard library only: one thread accepts, one thread serves each connection.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

from shipyard.common.collective_wire import (
    COLLECTIVE,
    ERROR,
    HELLO,
    PEER_LEFT,
    decode_request,
    encode_error,
    encode_ok,
    read_frame,
)

GROUP_RANKS = ""  # the ranks of ctx.distributed: the HELLO op core._collective sends
GROUP_NODES = "nodes"  # the launchers of a multi-node trial, one per node


def serve(size: int, host: str = "127.0.0.1") -> tuple[str, Callable[[], None]]:
    """Start a coordinator for ``size`` ranks on a free port of ``host``, in daemon threads.
    Returns its address ("host:port") and a function that stops it."""
    server = Server(size, host)
    return f"{host}:{server.port}", server.stop


class Server:
    """The listening socket and its groups: every connection is routed to the group its
    HELLO names. ``port`` 0: a free one; ``nodes`` > 0 adds the launchers' group."""

    def __init__(self, size: int, host: str = "127.0.0.1", port: int = 0, nodes: int = 0):
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.groups = {GROUP_RANKS: _Coordinator(size)}
        if nodes:
            self.groups[GROUP_NODES] = _Coordinator(nodes)
        self._listener = socket.create_server((host, port), backlog=max(16, 2 * size))
        self.port = int(self._listener.getsockname()[1])
        self._stopping = False
        self._lock = threading.Lock()
        self._unrouted: set[socket.socket] = set()  # connected, HELLO not read yet
        threading.Thread(target=self._accept_loop, name="shipyard-coordinator", daemon=True).start()

    def _accept_loop(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed by stop()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._unrouted.add(conn)
            threading.Thread(
                target=self._route, args=(conn,), name="shipyard-coord-conn", daemon=True
            ).start()

    def _route(self, conn: socket.socket) -> None:
        try:
            first = _recv_frame(conn)
            group = None
            if first is not None:
                kind, _rank, _size, _seq, _timeout, op, _payload = decode_request(first)
                group = self.groups.get(op) if kind == HELLO else None
                if group is None:
                    conn.sendall(encode_error(0, f"unexpected first request (kind {kind}, {op!r})"))
        except (OSError, ValueError):
            first, group = None, None
        with self._lock:
            self._unrouted.discard(conn)
        if first is None or group is None:
            _close(conn)
            return
        group.serve_connection(conn, first)

    def stop(self) -> None:
        self._stopping = True
        for group in self.groups.values():
            group.stop()
        _close(self._listener)
        with self._lock:
            unrouted = list(self._unrouted)
        for conn in unrouted:
            _shutdown(conn)


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
    """One group: its ranks' connections and collectives."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._cond = threading.Condition()
        self._rounds: dict[int, _Round] = {}
        self._connected: dict[int, socket.socket] = {}
        self._left: set[int] = set()
        self._broken: tuple[int, str] | None = None  # (status, message) once the group failed
        self._sockets: set[socket.socket] = set()

    # -- connections --------------------------------------------------------------------

    def stop(self) -> None:
        with self._cond:
            if self._broken is None:
                self._broken = (PEER_LEFT, "the coordinator was stopped by the launcher")
            sockets = list(self._sockets)
            self._cond.notify_all()
        for conn in sockets:
            _shutdown(conn)

    def wait_all_left(self, timeout_s: float | None = None) -> bool:
        """Wait until every rank of the group has connected and left (its connection
        closed); False if ``timeout_s`` passed first."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            while len(self._left) < self.size:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining if remaining is not None else 1.0)
            return True

    def serve_connection(self, conn: socket.socket, body: bytes) -> None:
        """Serve one rank's connection, starting from its first frame (its HELLO)."""
        with self._cond:
            self._sockets.add(conn)
        rank: int | None = None
        try:
            while True:
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
                next_body = _recv_frame(conn)
                if next_body is None:
                    return
                body = next_body
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
        _close(conn)

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
    return read_frame(conn, "a rank", eof_ok=True)


def _shutdown(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass
