"""How the launchers of a multi-node trial meet, one per node.

This is the contract between a backend and the launchers (the Ray, Slurm and Kubernetes
backends set these variables; docs/distributed.md):

- ``SHIPYARD_NUM_NODES`` (default 1) and ``SHIPYARD_NODE_RANK`` (0..N-1). Each node's
  launcher gets ``SHIPYARD_SLOT_IDS`` listing only that node's slots, and every node must have
  the same number of local slots: otherwise every launcher refuses (one line on stderr, exit
  code 2) once they have met.
- ``SHIPYARD_RENDEZVOUS_ADDR`` = "host:port", reachable from every node. ``port`` is torch's
  MASTER_PORT (its TCPStore, bound by global rank 0, on node 0); ``port + 1`` is Shipyard's
  coordinator, bound by node 0's launcher on every interface: the ranks' collectives of
  ``ctx.distributed`` (SHIPYARD_DIST_ADDR = host:port+1) and the launchers' own meeting,
  where they learn each other's slots and addresses (below). With SHIPYARD_NUM_NODES unset
  or 1 nothing changes: free local ports on 127.0.0.1.
- Ranks: RANK = SHIPYARD_RANK = node_rank * local_slots + local_rank, WORLD_SIZE =
  SHIPYARD_SIZE = nodes * local_slots, LOCAL_RANK and LOCAL_WORLD_SIZE (and SHIPYARD_LOCAL_*)
  within the node, NODE_RANK = GROUP_RANK = node_rank, GROUP_WORLD_SIZE = nodes,
  MASTER_ADDR/MASTER_PORT = the rendezvous host and port, as torchrun sets them; TF_CONFIG
  lists every worker of every node (worker index = global rank). ``[rank=R]`` is the global
  rank, and the chief of ``ctx.distributed`` is global rank 0.
- A rank exiting non-zero ends its own node's ranks and its launcher exits with its code;
  ending the other nodes is the backend's job (it ends the whole gang). Optional:
  SHIPYARD_RENDEZVOUS_TIMEOUT_S (default 600) bounds how long the launchers wait for each
  other; failing to meet is exit code 1.

Node 0's launcher serves the coordinator on the rendezvous port + 1, on every interface, with
two groups (launch/_coordinator.py): the ranks of ``ctx.distributed`` (global ranks, so the
chief is global rank 0) and "nodes", the launchers. Every launcher, node 0's included, joins
"nodes" as its node rank and allgathers what the others must know of it: its number of local
slots, the address they reach it at (the local end of its connection to node 0: a name like
a Kubernetes service resolves to node 0, and the answer is this machine's routable address)
and, for tensorflow, its workers' ports. Each launcher then builds its ranks' environments
from the same table, so all agree without another message.

Ending: node 0's launcher hosts the coordinator. When its ranks exit 0 it waits for every
other launcher to leave before stopping it (a rank elsewhere may still be reading the answer
to its last collective); after a failure it stops it at once, so the other nodes' ranks fail
their next collective instead of waiting. Stopping the other nodes' ranks is the backend's
job (it ends the whole gang).
"""

from __future__ import annotations

import json
import select
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from shipyard.common.collective_wire import (
    COLLECTIVE,
    HELLO,
    OK,
    decode_reply,
    encode_request,
    read_frame,
)
from shipyard.common.ports import free_ports
from shipyard.launch import _coordinator
from shipyard.launch._exits import EXIT_USAGE
from shipyard.launch._options import UsageError
from shipyard.launch._output import Output

NUM_NODES = "SHIPYARD_NUM_NODES"
NODE_RANK = "SHIPYARD_NODE_RANK"
RENDEZVOUS_ADDR = "SHIPYARD_RENDEZVOUS_ADDR"
TIMEOUT = "SHIPYARD_RENDEZVOUS_TIMEOUT_S"  # optional: how long the launchers wait for each other
DEFAULT_TIMEOUT_S = 600.0  # nodes of one gang may start minutes apart (images, placement)
LOCALHOST = "127.0.0.1"
_USAGE_WAIT_S = 10.0  # node 0 keeps serving this long after refusing, for the others to hear why


class RendezvousError(Exception):
    """The launchers could not meet (unreachable, timed out, a node left): exit code 1."""


@dataclass(frozen=True)
class Nodes:
    """This launcher's place among the nodes of a multi-node trial."""

    count: int
    rank: int
    host: str  # the rendezvous host: node 0, reachable from every node
    port: int  # torch's MASTER_PORT; port + 1 is Shipyard's coordinator

    @property
    def coordinator_addr(self) -> str:
        return f"{self.host}:{self.port + 1}"


@dataclass(frozen=True)
class Layout:
    """Where this launcher's ranks sit in the whole gang: global rank = first_rank + local."""

    nodes: int
    node_rank: int
    local_size: int
    master_addr: str
    master_port: int
    # every node's table entry, in node order: "slots", "host", and what the launcher added
    peers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def first_rank(self) -> int:
        return self.node_rank * self.local_size

    @property
    def world_size(self) -> int:
        return self.nodes * self.local_size

    def describe(self) -> str:
        """This node's place, for a launcher's log: node K of N: ranks A-B of W."""
        first, last = self.first_rank, self.first_rank + self.local_size - 1
        return f"node {self.node_rank} of {self.nodes}: ranks {first}-{last} of {self.world_size}"

    @classmethod
    def one_node(cls, local_size: int) -> Layout:
        (port,) = free_ports(1, LOCALHOST)
        return cls(1, 0, local_size, LOCALHOST, port)


def from_env(env: dict[str, str]) -> Nodes | None:
    """The multi-node variables; None for one node (SHIPYARD_NUM_NODES unset or 1)."""
    raw = env.get(NUM_NODES, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise UsageError(f"{NUM_NODES} must be a number of nodes of 1 or more, got {raw!r}")
    count = int(raw)
    if count == 1:
        return None
    rank_text = env.get(NODE_RANK, "").strip()
    if not rank_text.isdigit() or int(rank_text) >= count:
        raise UsageError(
            f"{NODE_RANK} must be this node's rank, 0 to {count - 1} ({NUM_NODES}={count}), "
            f"got {rank_text!r}"
        )
    addr = env.get(RENDEZVOUS_ADDR, "").strip()
    host, _, port_text = addr.rpartition(":")
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65535:
        raise UsageError(
            f"{RENDEZVOUS_ADDR} must be host:port, reachable from every node (node 0's "
            f"launcher listens on port and port+1), got {addr!r}"
        )
    return Nodes(count, int(rank_text), host.strip("[]"), int(port_text))


def timeout_s(env: dict[str, str]) -> float:
    raw = env.get(TIMEOUT, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UsageError(f"{TIMEOUT} must be a number of seconds > 0, got {raw!r}")
    return value


class Meeting:
    """This launcher's part in the gang: ``meet()`` makes it, ``finish(code)`` ends it.
    ``dist_addr``: the coordinator of ctx.distributed (None: the launcher wants none)."""

    def __init__(self, layout: Layout, dist_addr: str | None) -> None:
        self.layout = layout
        self.dist_addr = dist_addr
        self._server: _coordinator.Server | None = None
        self._link: _Link | None = None

    def host_left(self) -> bool:
        """Node 0's launcher has ended (always False on node 0 and on one node)."""
        return self._link is not None and self._server is None and self._link.peer_closed()

    def finish(self, code: int, *, wait_s: float | None = None) -> None:
        """Leave; node 0 (the host) first waits for the others when ``code`` is 0."""
        if self._link is not None:
            self._link.close()
        if self._server is not None:
            nodes = self._server.groups.get(_coordinator.GROUP_NODES)
            if nodes is not None and (code == 0 or wait_s is not None):
                nodes.wait_all_left(wait_s)
            self._server.stop()


def meet(
    nodes: Nodes | None,
    local_slots: int,
    env: dict[str, str],
    extra: dict[str, Any] | None = None,
    *,
    coordinator: bool = True,
) -> Meeting:
    """One node: a local coordinator on a free port, as always. Several: serve (node 0),
    join the other launchers and check that every node has as many slots as this one
    (UsageError otherwise, on every node alike)."""
    if nodes is None:
        if not coordinator:
            return Meeting(Layout.one_node(local_slots), None)
        local = _coordinator.Server(local_slots)
        meeting = Meeting(Layout.one_node(local_slots), f"{LOCALHOST}:{local.port}")
        meeting._server = local
        return meeting
    wait = timeout_s(env)
    server = None
    if nodes.rank == 0:
        try:  # every interface: the other nodes come from outside
            server = _coordinator.Server(
                nodes.count * local_slots, "", nodes.port + 1, nodes=nodes.count
            )
        except OSError as exc:
            raise RendezvousError(
                f"node 0 cannot listen on port {nodes.port + 1} ({RENDEZVOUS_ADDR}="
                f"{nodes.host}:{nodes.port}, port + 1 is Shipyard's coordinator): {exc}"
            ) from exc
    meeting = Meeting(Layout(nodes.count, nodes.rank, local_slots, nodes.host, nodes.port), None)
    meeting._server = server
    try:
        meeting.layout = _join(meeting, nodes, local_slots, extra or {}, wait)
    except UsageError:
        meeting.finish(2, wait_s=_USAGE_WAIT_S)
        raise
    except BaseException:
        meeting.finish(1)
        raise
    meeting.dist_addr = nodes.coordinator_addr
    return meeting


def meet_or_exit(
    prog: str,
    out: Output,
    local_slots: int,
    env: dict[str, str],
    extra: dict[str, Any] | None = None,
    *,
    coordinator: bool = True,
) -> Meeting | int:
    """``meet()`` as the multi-node variables of ``env`` say, or the launcher's exit code once
    it said why not: a usage error is one line on stderr (2), launchers that could not meet
    say so in the log (1)."""
    try:
        return meet(from_env(env), local_slots, env, extra, coordinator=coordinator)
    except UsageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RendezvousError as exc:
        out.say(str(exc))
        return 1


def _join(
    meeting: Meeting, nodes: Nodes, local_slots: int, extra: dict[str, Any], wait: float
) -> Layout:
    where = f"{RENDEZVOUS_ADDR}={nodes.host}:{nodes.port}"
    try:
        link = meeting._link = _Link(nodes, wait)
        mine = {"slots": local_slots, "host": link.local_host, **extra}
        parts = link.allgather(json.dumps(mine).encode())
    except OSError as exc:
        raise RendezvousError(
            f"node {nodes.rank} could not meet the other nodes ({where}): {exc}"
        ) from None
    peers = [json.loads(part) for part in parts]
    counts = [int(p["slots"]) for p in peers]
    if len(set(counts)) > 1:
        each = ", ".join(f"node {n} has {c}" for n, c in enumerate(counts))
        raise UsageError(
            f"every node of a multi-node trial must have the same number of local slots "
            f"(SHIPYARD_SLOT_IDS): {each}"
        )
    return Layout(nodes.count, nodes.rank, local_slots, nodes.host, nodes.port, peers)


class _Link:
    """A launcher's connection to node 0's coordinator in the "nodes" group (the byte format
    of common/collective_wire.py): one allgather, then held open until the launcher ends, so
    node 0 knows when every node is done."""

    def __init__(self, nodes: Nodes, wait_s: float) -> None:
        self.nodes, self.wait_s = nodes, wait_s
        deadline = time.monotonic() + wait_s
        delay = 0.05
        while True:  # node 0 may not listen yet: the nodes start when they start
            try:
                self.sock = socket.create_connection((nodes.host, nodes.port + 1), timeout=wait_s)
                break
            except OSError as exc:
                if time.monotonic() + delay > deadline:
                    raise OSError(f"node 0 did not answer within {wait_s:g} s: {exc}") from exc
                time.sleep(delay)
                delay = min(2 * delay, 1.0)
        # This machine's address as node 0 reaches it: what the other nodes are told.
        self.local_host = str(self.sock.getsockname()[0])
        self._ask(HELLO, 0, _coordinator.GROUP_NODES, b"")

    def allgather(self, payload: bytes) -> list[bytes]:
        return self._ask(COLLECTIVE, 1, "allgather", payload)

    def _ask(self, kind: int, seq: int, op: str, payload: bytes) -> list[bytes]:
        nodes = self.nodes
        self.sock.settimeout(self.wait_s + 30)  # the coordinator answers at wait_s itself
        self.sock.sendall(
            encode_request(kind, nodes.rank, nodes.count, seq, self.wait_s, op, payload)
        )
        status, _seq, result = decode_reply(read_frame(self.sock, "node 0's launcher"))
        if status != OK:
            raise OSError(str(result))
        assert isinstance(result, list)
        return result

    def peer_closed(self) -> bool:
        """Node 0 closed the connection (nothing else comes on it after the allgather)."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            return bool(readable) and self.sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
