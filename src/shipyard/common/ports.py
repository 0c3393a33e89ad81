"""Free ports, for the launchers and the backends that place a trial's rendezvous. Standard
library only. (The Slurm batch script carries its own copy: it runs with a node's python3,
which need not have Shipyard; backends/slurm/script.py.)"""

from __future__ import annotations

import socket
from contextlib import ExitStack


def free_ports(count: int, host: str = "", *, consecutive: bool = False) -> list[int]:
    """``count`` distinct ports free on ``host`` ("": every interface), all held until the
    last is picked, then released: the caller binds them a moment later. ``consecutive``:
    p, p + 1, ... (a multi-node rendezvous: node 0's launcher binds p, torch's MASTER_PORT,
    and p + 1, Shipyard's coordinator)."""
    for _ in range(100 if consecutive else 1):
        with ExitStack() as held:
            ports: list[int] = []
            for i in range(count):
                sock = held.enter_context(socket.socket())
                wanted = ports[0] + i if ports and consecutive else 0
                if wanted > 65535:
                    break
                try:
                    sock.bind((host, wanted))
                except OSError:
                    if not wanted:
                        raise
                    break  # taken: try another first port
                ports.append(int(sock.getsockname()[1]))
            if len(ports) == count:
                return ports
    raise OSError(f"no {count} consecutive free ports on {host or 'any interface'}")
