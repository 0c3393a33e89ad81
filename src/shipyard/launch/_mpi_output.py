"""Where an mpirun gang's ranks send their stdout and stderr: each rank's shim
(``_mpi_rank``) connects once per stream, says which rank it is and its pid, and its lines
are relayed as ``[rank=R] line``, as the other launchers' are (``_output``)."""

from __future__ import annotations

import socket
import threading

from shipyard.common.log_prefix import rank_prefix
from shipyard.launch._mpi_rank import HELLO
from shipyard.launch._output import Output, join_all, relay

LOCALHOST = "127.0.0.1"


class OutputServer:
    """Where the ranks' stdout and stderr arrive (one connection each): relayed as
    ``[rank=R] line``. Records each rank's pid."""

    def __init__(self, out: Output, host: str = LOCALHOST) -> None:
        self.out = out
        self.pids: dict[int, int] = {}
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(0.2)
        self._stopping = False
        self._relays: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._accepter = threading.Thread(target=self._accept, daemon=True, name="mpi-output")
        self._accepter.start()

    def rank_pids(self) -> dict[int, int]:
        """The pid (and process group) of each rank that connected, by rank."""
        with self._lock:
            return dict(self.pids)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def _accept(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._relay, args=(conn,), daemon=True)
            with self._lock:
                self._relays.append(thread)
            thread.start()

    def _relay(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(None)
            stream = conn.makefile("rb")
            hello = stream.readline(256).decode("ascii", errors="replace").split()
            if len(hello) != 4 or hello[0] != HELLO or not hello[1].isdigit():
                stream.close()
                return  # not one of our ranks
            rank = int(hello[1])
            if hello[3].isdigit():
                with self._lock:
                    self.pids[rank] = int(hello[3])
            relay(stream, rank_prefix(rank).encode(), self.out)

    def close(self, wait_s: float) -> None:
        """Stop accepting; give the output of ranks that exited ``wait_s`` to drain."""
        if self._stopping:
            return
        self._stopping = True
        self._accepter.join(timeout=1.0)
        self._listener.close()
        with self._lock:
            relays = list(self._relays)
        join_all(relays, wait_s)
