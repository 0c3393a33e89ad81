"""Free ports for a multi-node trial's rendezvous (launch/_nodes.py): node 0's launcher binds
port p (torch's MASTER_PORT) and p + 1 (Shipyard's coordinator). Standard library only: it
runs on the nodes of a cluster too (`python3 -m shipyard.common.ports` prints one)."""

from __future__ import annotations

import socket


def free_port_pair(host: str = "") -> int:
    """A port p such that p and p + 1 are both free on ``host`` ("": every interface).
    Checked, then released: the launcher binds them a moment later."""
    for _ in range(100):
        with socket.socket() as first, socket.socket() as second:
            first.bind((host, 0))
            port = int(first.getsockname()[1])
            if port >= 65535:
                continue
            try:
                second.bind((host, port + 1))
            except OSError:
                continue
            return port
    raise OSError(f"no two consecutive free ports on {host or 'any interface'}")


if __name__ == "__main__":
    print(free_port_pair())
